// RowLock with real concurrent processes on every server driver × dialect pair: never-seen names.
// (Mutual exclusion on a shared counter, and a killed holder's lock — free at once, its uncommitted
// writes rolled back: tests/contract/, for every kind.)
#include <unistd.h>

#include <thread>

#include "sqllock/row_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

class RowLockProcessTest : public LockTableTest {};

TEST_P(RowLockProcessTest, TwoProcessesTakeNeverSeenNamesInTurnWithoutDeadlock) {
  // The missing-row trap: FOR UPDATE on a row nobody created yet locks nothing (PostgreSQL) or a
  // shared gap (InnoDB), so both would "win" and then deadlock. Both processes race through the
  // same fresh names at once; every lock must be granted, one holder at a time.
  constexpr int kNames = 30;
  const std::string prefix = unique_name("fresh");
  const std::string log = unique_name("log");
  {
    auto db = open_owner();
    sql(db, "CREATE TABLE " + log + " (name VARCHAR(100) NOT NULL, pid INTEGER NOT NULL, v INTEGER NOT NULL)");
  }
  process_group group;
  for (int p = 0; p < 2; ++p) {
    group.spawn([&] {
      auto db = open();
      for (int i = 0; i < kNames; ++i) {
        const std::string name = prefix + "_" + std::to_string(i);
        with_row_lock(db, name, [&](row_lock_tx& tx) {
          // Both processes append v = (rows so far for this name); under mutual exclusion the
          // two values are 0 and 1, never 0 and 0.
          const auto seen =
              tx.exec("SELECT COUNT(*) FROM " + log + " WHERE name = $1", {name}).rows.at(0).at(0).value();
          std::this_thread::sleep_for(5ms);
          tx.exec("INSERT INTO " + log + " (name, pid, v) VALUES ($1, $2, $3)",
                  {name, std::int64_t{::getpid()}, std::int64_t{std::stoll(seen)}});
        });
      }
      return 0;
    });
  }
  EXPECT_EQ(group.wait_all(), 2) << "a process failed (deadlock?)";
  auto db = open();
  EXPECT_EQ(sql(db, "SELECT COUNT(*) FROM " + log).rows.at(0).at(0), std::to_string(2 * kNames));
  EXPECT_EQ(sql(db, "SELECT COUNT(DISTINCT name) FROM " + log + " WHERE v = 1").rows.at(0).at(0),
            std::to_string(kNames))
      << "each name was held by one process at a time";
  EXPECT_EQ(sql(db, "SELECT COUNT(*) FROM " + table_ + "_rows").rows.at(0).at(0), std::to_string(kNames));
}

INSTANTIATE_TEST_SUITE_P(ServerTargets, RowLockProcessTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });
// The same contracts through PgBouncer in transaction mode (?prepare=off), on both PostgreSQL
// drivers: statement-sized locks work behind a transaction-mode pooler.
INSTANTIATE_TEST_SUITE_P(Pgbouncer, RowLockProcessTest, ::testing::ValuesIn(pgbouncer_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
