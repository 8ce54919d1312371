// sqllock-reaper — deletes lock rows, permits and queue entries whose lease ran out (and latches that
// are done): once (for cron) or periodically (as a daemon under systemd). See docs/operations.md.
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "duration.hpp"
#include "reap_args.hpp"
#include "reaper_loop.hpp"
#include "stop_signals.hpp"

namespace {

using namespace std::chrono_literals;

constexpr std::string_view kUsage =
    "usage: sqllock-reaper [--db URI] (--once | --interval D) [--table NAME] [--batch N]\n"
    "                      [--grace D] [--metrics-file PATH]\n"
    "\n"
    "Deletes the lock rows, semaphore permits and places in the queues of fair and read-write\n"
    "locks whose lease ran out (by the database's clock), in batches, skipping rows another\n"
    "transaction holds, then latches that opened long ago or ran past their ttl. Never deletes a\n"
    "live lock or a live waiter's place; any number of reapers may run at once.\n"
    "\n"
    "  --db URI             database URI (default: $SQLLOCK_DB)\n"
    "  --once               one pass, then exit: 0 on success, 3 database unreachable, 4 lock\n"
    "                       table missing, 6 other database error (for cron)\n"
    "  --interval D         a pass every D until SIGTERM or SIGINT (as a daemon); database\n"
    "                       errors are logged and retried after 1 s, doubling up to D (at most\n"
    "                       60 s), so the reaper survives database restarts\n"
    "  --table NAME         lock table name (default: distributed_lock)\n";

constexpr std::string_view kUsageTail =
    "  --metrics-file PATH  after every pass, write Prometheus metrics to PATH (atomically, via\n"
    "                       a temporary file and rename): passes, rows reaped, errors, last\n"
    "                       pass duration, time of the last successful pass\n"
    "\n"
    "Logs one logfmt line per pass: time, level, table, rows reaped (lock rows, permits, queue\n"
    "entries and latches together), duration, errors so far;\n"
    "info on stdout, errors on stderr. Exit status 2 for a bad command line, URI or table name,\n"
    "70 for an internal error. See sqllock-reaper(8).\n";

// Exits within this long of SIGTERM/SIGINT even when a database call hangs.
constexpr auto kStopGrace = 800ms;

sqllock::reaper::config parse(sqllock::cli::args& a) {
  using sqllock::cli::usage_error;
  sqllock::reaper::config cfg;
  if (auto t = a.take("table")) cfg.db_options.table = *t;
  cfg.reap = sqllock::cli::take_reap_options(a);
  const bool once = a.flag("once");
  if (auto v = a.take("interval")) {
    cfg.interval = sqllock::cli::parse_duration(*v, "--interval");
    if (cfg.interval->count() == 0) throw usage_error{"--interval must be longer than 0"};
  }
  if (once == cfg.interval.has_value()) throw usage_error{"give exactly one of --once and --interval D"};
  if (auto m = a.take("metrics-file")) {
    if (m->empty()) throw usage_error{"--metrics-file needs a path"};
    cfg.metrics_file = *m;
  }
  cfg.uri = sqllock::cli::database_uri(a);
  a.expect_done();
  return cfg;
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = sqllock::cli;
  cli::args a(std::vector<std::string>(argv + 1, argv + argc));
  sqllock::reaper::config cfg;
  try {
    if (a.flag("help", "h")) {
      std::cout << kUsage << cli::kReapOptionsUsage << kUsageTail << "\nDurations: " << cli::kDurationForms << ".\n";
      return cli::exit_ok;
    }
    cfg = parse(a);
  } catch (const cli::usage_error& e) {
    std::cerr << "sqllock-reaper: " << e.message << " (see --help)\n";
    return cli::exit_usage;
  }
  try {
    sqllock::reaper::stop_signals signals(kStopGrace);  // before any other thread starts
    return sqllock::reaper::run(cfg, signals.token());
  } catch (const std::exception& e) {
    std::cerr << "sqllock-reaper: internal error: " << e.what() << "\n";
    return cli::exit_internal;
  }
}
