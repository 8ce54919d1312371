// Session locks across a server restart: the keepalive must report the dead session, and the
// handle must recover (stale pooled connections are replaced). Restarts the test servers, so ctest
// runs this program alone (RUN_SERIAL); it needs the private servers of scripts/test-servers.sh.
#include <thread>

#include "sqllock/error.hpp"
#include "support/lock_kinds.hpp"
#include "support/server_control.hpp"
#include "support/session_lock_fixture.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

class SessionLockRestartTest : public SessionLockTest {};

TEST_P(SessionLockRestartTest, AServerRestartIsReportedAsLostAndTheHandleRecovers) {
  const auto server = server_control::for_tests(GetParam());
  if (!server) {
    if (servers_required()) FAIL() << "needs the private test servers (SQLLOCK_TEST_SERVERS_SCRIPT)";
    GTEST_SKIP() << "not running against the private test servers";
  }
  // The session lock of the target's dialect: advisory_lock or named_lock.
  const auto kind = session_lock_kind(GetParam().dialect);
  auto db = open();
  lock_settings o;
  o.keepalive = 500ms;
  const std::string name = unique_name("restart");
  const auto lock = kind.make(db, name, o);
  lock->lock();
  // Leave idle connections in the pool too: they die with the server.
  std::vector<std::thread> fillers;
  for (int i = 0; i < 3; ++i) fillers.emplace_back([&] { sql(db, "SELECT 1"); });
  for (auto& t : fillers) t.join();
  const auto token = lock->lost_token();

  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration lost_after{};
  std::thread watcher([&] {
    time_until([&] { return token.stop_requested(); }, 30s);
    lost_after = std::chrono::steady_clock::now() - start;
  });
  const auto restarted = server->run("restart");
  const auto restarted_after = std::chrono::steady_clock::now() - start;
  watcher.join();
  ASSERT_EQ(restarted.code, 0) << restarted.out << restarted.err;
  const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  std::printf("[ info ] restart took %lld ms; lost signalled after %lld ms\n",
              static_cast<long long>(ms(restarted_after)), static_cast<long long>(ms(lost_after)));
  EXPECT_TRUE(token.stop_requested());
  // The server ends sessions at the start of the restart; the keepalive notices within one
  // period (+ 1 s of slack), whatever the restart itself takes afterwards.
  EXPECT_LE(lost_after, restarted_after + 1500ms);
  EXPECT_LE(lost_after, 10s);
  EXPECT_FALSE(lock->holds());
  EXPECT_THROW(lock->release(), not_held);
  EXPECT_TRUE(lock->try_lock()) << "stale pooled connections are replaced, not reported";
  lock->unlock();
}

INSTANTIATE_TEST_SUITE_P(SessionLocks, SessionLockRestartTest, ::testing::ValuesIn(session_lock_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
