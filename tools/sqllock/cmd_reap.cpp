// sqllock reap: one reaper pass, deleting lock rows, permits and queue entries whose lease ran out
// (and latches that are done).
#include <chrono>
#include <iostream>

#include "cli.hpp"
#include "duration.hpp"
#include "format.hpp"
#include "reap_args.hpp"
#include "sqllock/database.hpp"
#include "sqllock/reaper.hpp"

namespace sqllock::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: sqllock reap [--db URI] [--table NAME] [--batch N] [--grace D]\n"
    "\n"
    "Deletes the lock rows, semaphore permits and places in the queues of fair and read-write\n"
    "locks whose lease ran out (by the database's clock), in batches, skipping rows another\n"
    "transaction holds, then latches that opened long ago or ran past their ttl. Never deletes a\n"
    "live lock or a live waiter's place; safe to run alongside other reapers. For a periodic\n"
    "reaper use the sqllock-reaper program.\n"
    "\n"
    "  --db URI             database URI (default: $SQLLOCK_DB)\n"
    "  --table NAME         lock table name (default: distributed_lock)\n";

}  // namespace

int cmd_reap(args a) {
  if (a.flag("help", "h")) {
    std::cout << kUsage << kReapOptionsUsage << "\nDurations: " << kDurationForms << ".\n";
    return exit_ok;
  }
  database_options options;
  if (auto t = a.take("table")) options.table = *t;
  const reap_options reap_opts = take_reap_options(a);
  const std::string uri = database_uri(a);
  a.expect_done();

  database db(uri, options);
  const auto started = std::chrono::steady_clock::now();
  const auto n = reap(db, reap_opts);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  std::cout << "reaped " << n << " expired row" << (n == 1 ? "" : "s")
            << " (locks, permits, queue entries, latches) from '" << db.table() << "' in " << seconds_text(took.count())
            << " s\n";
  return exit_ok;
}

}  // namespace sqllock::cli
