// sqllock migrate: creates or upgrades the lock table.
#include <iostream>

#include "cli.hpp"
#include "sqllock/database.hpp"
#include "sqllock/migrate.hpp"

namespace sqllock::cli {

namespace {
constexpr std::string_view kUsage =
    "usage: sqllock migrate [--db URI] [--table NAME]\n"
    "\n"
    "Creates the lock table, or upgrades it to this sqllock's schema. Safe to run again and from\n"
    "many processes at once. Needs a role that may create tables; the locks themselves need only\n"
    "SELECT/INSERT/UPDATE/DELETE.\n"
    "\n"
    "  --db URI      database URI (default: $SQLLOCK_DB), e.g. sqlite:///var/lib/app/locks.db,\n"
    "                postgresql://user@host/db, mysql://user:pass@host/db\n"
    "  --table NAME  lock table name (default: distributed_lock)\n";
}  // namespace

int cmd_migrate(args a) {
  if (a.flag("help", "h")) {
    std::cout << kUsage;
    return exit_ok;
  }
  database_options options;
  if (auto t = a.take("table")) options.table = *t;
  const std::string uri = database_uri(a);
  a.expect_done();

  database db(uri, options);
  const auto result = migrate(db);
  if (result.applied.empty()) {
    std::cout << "lock table '" << db.table() << "' on " << db.display_uri() << " is at schema version "
              << result.version << "; nothing to do\n";
  } else {
    std::cout << "lock table '" << db.table() << "' on " << db.display_uri() << ": applied";
    for (int v : result.applied) std::cout << ' ' << v;
    std::cout << "; now at schema version " << result.version << "\n";
  }
  return exit_ok;
}

}  // namespace sqllock::cli
