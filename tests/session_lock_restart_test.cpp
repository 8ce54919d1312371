// Session locks across a server restart: the keepalive must report the dead session, and the
// handle must recover (stale pooled connections are replaced). Restarts the test servers, so ctest
// runs this program alone (RUN_SERIAL); it needs the private servers of scripts/test-servers.sh.
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "sqllock/advisory_lock.hpp"
#include "sqllock/named_lock.hpp"
#include "support/session_lock_fixture.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

// A value the servers' env file (or the environment) provides.
std::string server_setting(const char* key) {
  if (const char* v = std::getenv(key); v && *v) return v;
  const char* path = std::getenv("SQLLOCK_TEST_ENV_FILE");
  std::ifstream in(path ? path : SQLLOCK_TEST_DEFAULT_ENV_FILE);
  std::string line;
  const std::string prefix = std::string(key) + "=";
  while (std::getline(in, line)) {
    if (line.rfind("export ", 0) == 0) line.erase(0, 7);
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  return "";
}

class SessionLockRestartTest : public SessionLockTest {};

TEST_P(SessionLockRestartTest, AServerRestartIsReportedAsLostAndTheHandleRecovers) {
  const std::string script = server_setting("SQLLOCK_TEST_SERVERS_SCRIPT");
  const std::string dir = server_setting("SQLLOCK_TEST_STATE_DIR");
  if (script.empty() || dir.empty()) {
    if (servers_required()) FAIL() << "needs the private test servers (SQLLOCK_TEST_SERVERS_SCRIPT)";
    GTEST_SKIP() << "not running against the private test servers";
  }
  const bool pg = GetParam().dialect == dialect_kind::postgresql;
  auto db = open();
  session_lock_options o;
  o.keepalive = 500ms;
  std::unique_ptr<advisory_lock> adv;
  std::unique_ptr<named_lock> named;
  const std::string name = unique_name("restart");
  if (pg) {
    adv = std::make_unique<advisory_lock>(db, name, o);
    adv->lock();
  } else {
    named = std::make_unique<named_lock>(db, name, o);
    named->lock();
  }
  // Leave idle connections in the pool too: they die with the server.
  std::vector<std::thread> fillers;
  for (int i = 0; i < 3; ++i) fillers.emplace_back([&] { sql(db, "SELECT 1"); });
  for (auto& t : fillers) t.join();
  const auto token = pg ? adv->lost_token() : named->lost_token();

  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration lost_after{};
  std::thread watcher([&] {
    time_until([&] { return token.stop_requested(); }, 30s);
    lost_after = std::chrono::steady_clock::now() - start;
  });
  const std::string command = "'" + script + "' " + (pg ? "restart-pg" : "restart-my") + " '" + dir + "' >/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const auto restarted_after = std::chrono::steady_clock::now() - start;
  watcher.join();
  const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  std::printf("[ info ] restart took %lld ms; lost signalled after %lld ms\n", static_cast<long long>(ms(restarted_after)),
              static_cast<long long>(ms(lost_after)));
  EXPECT_TRUE(token.stop_requested());
  // The server ends sessions at the start of the restart; the keepalive notices within one
  // period (+ 1 s of slack), whatever the restart itself takes afterwards.
  EXPECT_LE(lost_after, restarted_after + 1500ms);
  EXPECT_LE(lost_after, 10s);
  if (pg) {
    EXPECT_FALSE(adv->holds());
    EXPECT_THROW(adv->release(), not_held);
    EXPECT_TRUE(adv->try_lock()) << "stale pooled connections are replaced, not reported";
    adv->unlock();
  } else {
    EXPECT_FALSE(named->holds());
    EXPECT_THROW(named->release(), not_held);
    EXPECT_TRUE(named->try_lock()) << "stale pooled connections are replaced, not reported";
    named->unlock();
  }
}

INSTANTIATE_TEST_SUITE_P(SessionLocks, SessionLockRestartTest, ::testing::ValuesIn([] {
                           auto out = targets_of(dialect_kind::postgresql);
                           for (auto& t : targets_of(dialect_kind::mysql)) out.push_back(t);
                           return out;
                         }()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
