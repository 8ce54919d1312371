// Fencing tokens keep increasing across a restart of the database server. Restarts disturb every
// test using the same servers, so ctest runs this program on its own (RUN_SERIAL).
#include <filesystem>

#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/program.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

class TableLockRestartTest : public LockTableTest {};

TEST_P(TableLockRestartTest, FenceKeepsIncreasingAcrossAServerRestart) {
  std::int64_t before = 0;
  {
    auto db = open();
    table_lock lock(db, "restart");
    for (int i = 0; i < 3; ++i) {  // several grants, so the fence source has moved on
      ASSERT_TRUE(lock.try_lock());
      before = lock.fence();
      lock.unlock();
    }
  }
  if (GetParam().dialect == dialect_kind::sqlite) {
    // The embedded database has no server: closing every handle and reopening the file is its restart.
  } else {
    const bool pg = GetParam().dialect == dialect_kind::postgresql;
    const auto script = test_setting("SQLLOCK_TEST_SERVERS_SCRIPT");
    const auto state = test_setting("SQLLOCK_TEST_STATE_DIR");
    if (!script || !state || !test_setting(pg ? "SQLLOCK_TEST_PG_DATA" : "SQLLOCK_TEST_MY_DATA"))
      GTEST_SKIP() << "the server was not started by scripts/test-servers.sh, so it cannot be restarted";
    const auto dir = make_temp_dir("sqllock-fence-restart");
    // An immediate stop (SIGKILL) is the harsher case: nothing is flushed politely.
    for (const std::string action : {"kill-", "start-"}) {
      const auto r = run_program({*script, action + (pg ? "pg" : "my"), *state}, dir, {}, 180s);
      ASSERT_EQ(r.code, 0) << action << ": " << r.out << r.err;
    }
    std::filesystem::remove_all(dir);
  }
  auto db = open();
  table_lock lock(db, "restart");
  ASSERT_TRUE(lock.try_lock_for(30s));
  EXPECT_GT(lock.fence(), before) << "the fence went backwards after a restart";
  lock.unlock();
}

INSTANTIATE_TEST_SUITE_P(AllTargets, TableLockRestartTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
