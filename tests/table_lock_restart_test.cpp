// Fencing tokens keep increasing across a restart of the database server, and a handle's pool
// drops the connections the restart closed. Restarts disturb every test using the same servers,
// so ctest runs this program on its own (RUN_SERIAL).
#include <cstdio>
#include <string>

#include "core/handle/database_impl.hpp"
#include "sqllock/error.hpp"
#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/server_control.hpp"

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
    const auto server = server_control::for_tests(GetParam());
    if (!server) GTEST_SKIP() << "the server was not started by scripts/test-servers.sh, so it cannot be restarted";
    // An immediate stop (SIGKILL) is the harsher case: nothing is flushed politely.
    server->must({"kill", "start"});
    if (HasFailure()) return;
  }
  auto db = open();
  table_lock lock(db, "restart");
  ASSERT_TRUE(lock.try_lock_for(30s));
  EXPECT_GT(lock.fence(), before) << "the fence went backwards after a restart";
  lock.unlock();
}

INSTANTIATE_TEST_SUITE_P(AllTargets, TableLockRestartTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

class PoolRestartTest : public LockTableTest {};

// A handle's pooled connections all die with a server restart. The pool sees the hang-up on an
// idle connection's socket and connects anew, so the first lock after the restart succeeds. Only
// Connector/C++ exposes no socket: there each dead pooled connection costs one connection_error
// (a typed error, as documented), and then the same handle locks again.
TEST_P(PoolRestartTest, TheFirstLockAfterAServerRestartSucceeds) {
  const auto server = server_control::for_tests(GetParam());
  if (!server) GTEST_SKIP() << "the server was not started by scripts/test-servers.sh, so it cannot be restarted";
  auto db = open();
  {
    // Two connections in the pool, both idle when the server goes away.
    auto& impl = detail::database_access::impl(db);
    auto first = impl.borrow();
    auto second = impl.borrow();
  }
  table_lock warm(db, "before-restart");
  ASSERT_TRUE(warm.try_lock());
  warm.unlock();

  server->must({"restart"});
  if (HasFailure()) return;

  table_lock lock(db, "after-restart");
  const bool socket_visible = GetParam().name != "mysql_mariadb";
  int failures = 0;
  for (;;) {
    try {
      ASSERT_TRUE(lock.try_lock());
      break;
    } catch (const connection_error& e) {
      ++failures;
      ASSERT_FALSE(socket_visible) << "a dead pooled connection was lent out: " << e.what();
      ASSERT_LE(failures, 2) << "more failures than dead pooled connections: " << e.what();
    }
  }
  lock.unlock();
  std::printf("[ info ] %s: %d failed attempt(s) after the restart\n", GetParam().name.c_str(), failures);
}

INSTANTIATE_TEST_SUITE_P(ServerTargets, PoolRestartTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
