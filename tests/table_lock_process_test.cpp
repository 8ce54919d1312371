// TableLock with real concurrent processes on every driver × dialect pair.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

class TableLockProcessTest : public LockTableTest {};

TEST_P(TableLockProcessTest, FourProcessesIncrementACounterWithoutLosingAnUpdate) {
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
      table_lock lock(db, "counter");
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard guard(lock);
        // Read, pause, write: without mutual exclusion increments get lost.
        const auto v = std::stoll(sql(db, "SELECT v FROM " + counter + " WHERE id = 1").rows.at(0).at(0).value());
        std::this_thread::sleep_for(200us);
        sql(db, "UPDATE " + counter + " SET v = $1 WHERE id = 1", {std::int64_t{v + 1}});
      }
      return 0;
    });
  }
  EXPECT_EQ(group.wait_all(), kProcesses);
  auto db = open();
  EXPECT_EQ(sql(db, "SELECT v FROM " + counter + " WHERE id = 1").rows.at(0).at(0), std::to_string(kProcesses * kRounds));
  EXPECT_EQ(rows(db), 0) << "every lock row is released";
}

TEST_P(TableLockProcessTest, AKilledHoldersLockIsFreeAfterItsTtl) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  process_group group;
  const pid_t holder = group.spawn([&] {
    auto db = open();
    table_lock_options o;
    o.ttl = 1s;
    table_lock lock(db, "crashy", o);
    lock.lock();
    (void)!::write(ready[1], "x", 1);
    std::this_thread::sleep_for(60s);  // killed long before
    return 0;
  });
  group.start();
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  auto db = open();
  table_lock lock(db, "crashy");
  EXPECT_FALSE(lock.try_lock());
  const auto old_fence = std::stoll(column(db, "crashy", "fence").value());
  ::kill(holder, SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(lock.try_lock_for(scaled(5s))) << "the dead holder's lease never expired";
  EXPECT_LT(std::chrono::steady_clock::now() - killed, scaled(2s)) << "free within the ttl + 1 s";
  EXPECT_GT(lock.fence(), old_fence);
  lock.unlock();
  ::close(ready[0]);
  ::close(ready[1]);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, TableLockProcessTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });
// The same contracts through PgBouncer in transaction mode (?prepare=off), on both PostgreSQL
// drivers: statement-sized locks work behind a transaction-mode pooler.
INSTANTIATE_TEST_SUITE_P(Pgbouncer, TableLockProcessTest, ::testing::ValuesIn(pgbouncer_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
