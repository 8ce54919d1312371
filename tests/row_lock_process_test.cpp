// RowLock with real concurrent processes on every server driver × dialect pair.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "sqllock/row_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

class RowLockProcessTest : public LockTableTest {};

TEST_P(RowLockProcessTest, FourProcessesIncrementACounterWithoutLosingAnUpdate) {
  constexpr int kProcesses = 4;
  constexpr int kRounds = 50;
  const std::string counter = unique_name("counter");
  {
    auto db = open_owner();  // the runtime role may not create tables
    sql(db, "CREATE TABLE " + counter + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
    sql(db, "INSERT INTO " + counter + " (id, v) VALUES (1, 0)");
  }
  process_group group;
  for (int p = 0; p < kProcesses; ++p) {
    group.spawn([&] {
      auto db = open();  // each process has its own handle and connections
      for (int i = 0; i < kRounds; ++i) {
        with_row_lock(db, "counter", [&](row_lock_tx& tx) {
          // Read, pause, write, in the lock's transaction: without mutual exclusion (or with a
          // snapshot older than the lock) increments get lost.
          const auto v = std::stoll(tx.exec("SELECT v FROM " + counter + " WHERE id = 1").rows.at(0).at(0).value());
          std::this_thread::sleep_for(200us);
          tx.exec("UPDATE " + counter + " SET v = $1 WHERE id = 1", {std::int64_t{v + 1}});
        });
      }
      return 0;
    });
  }
  EXPECT_EQ(group.wait_all(), kProcesses);
  auto db = open();
  EXPECT_EQ(sql(db, "SELECT v FROM " + counter + " WHERE id = 1").rows.at(0).at(0),
            std::to_string(kProcesses * kRounds));
  EXPECT_EQ(rows(db), 0) << "row locks never touch the lock table";
}

TEST_P(RowLockProcessTest, AKilledHoldersLockIsFreeAtOnce) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const std::string data = unique_name("data");
  {
    auto db = open_owner();
    sql(db, "CREATE TABLE " + data + " (id INTEGER PRIMARY KEY)");
  }
  process_group group;
  const pid_t holder = group.spawn([&] {
    auto db = open();
    with_row_lock(db, "crashy", [&](row_lock_tx& tx) {
      tx.exec("INSERT INTO " + data + " (id) VALUES (1)");
      (void)!::write(ready[1], "x", 1);
      std::this_thread::sleep_for(60s);  // killed long before
    });
    return 0;
  });
  group.start();
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  auto db = open();
  EXPECT_FALSE(try_with_row_lock(db, "crashy", [](row_lock_tx&) {}));
  ::kill(holder, SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  EXPECT_TRUE(try_with_row_lock_for(db, "crashy", 10s, [](row_lock_tx&) {})) << "the dead holder's lock stayed";
  EXPECT_LT(std::chrono::steady_clock::now() - killed, scaled(2s)) << "freed when the session ended, not by a timeout";
  EXPECT_EQ(sql(db, "SELECT COUNT(*) FROM " + data).rows.at(0).at(0), "0") << "the dead holder's write rolled back";
  group.wait_all();
  ::close(ready[0]);
  ::close(ready[1]);
}

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
          const auto seen = tx.exec("SELECT COUNT(*) FROM " + log + " WHERE name = $1", {name}).rows.at(0).at(0).value();
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
