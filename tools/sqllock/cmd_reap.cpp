// sqllock reap: one reaper pass, deleting lock rows whose lease ran out.
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
    "Deletes the lock rows whose lease ran out (by the database's clock), in batches, skipping\n"
    "rows another transaction holds. Never deletes a live lock; safe to run alongside other\n"
    "reapers. For a periodic reaper use the sqllock-reaper program.\n"
    "\n"
    "  --db URI             database URI (default: $SQLLOCK_DB)\n"
    "  --table NAME         lock table name (default: distributed_lock)\n";

}  // namespace

int cmd_reap(args a) {
  if (a.flag("help", "h")) {
    std::cout << kUsage << kReapOptionsUsage
              << "\nDurations: " << kDurationForms << ".\n";
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
  std::cout << "reaped " << n << " expired lock row" << (n == 1 ? "" : "s") << " from '" << db.table() << "' in "
            << seconds_text(took.count()) << " s\n";
  return exit_ok;
}

}  // namespace sqllock::cli
