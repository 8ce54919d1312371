// sqllock-reaper as a daemon while its database server restarts or stays down for a while
// (scripts/test-servers.sh restart-pg / stop-my …). These tests disturb every test using the same
// servers, so ctest runs this program on its own (RUN_SERIAL).
#include <csignal>
#include <sstream>

#include "support/lock_fixture.hpp"
#include "support/lock_rows.hpp"
#include "support/program.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

int count_events(const std::string& log, const std::vector<std::string>& want) {
  int n = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const auto& w : want) all = all && (" " + line + " ").find(" " + w + " ") != std::string::npos;
    n += all;
  }
  return n;
}

// The retry_in_ms values of the failed passes in `log`, in order.
std::vector<long long> retry_delays(const std::string& log) {
  std::vector<long long> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const auto p = line.find(" retry_in_ms=");
    if (p != std::string::npos) out.push_back(std::stoll(line.substr(p + 13)));
  }
  return out;
}

class ReaperRestartTest : public LockTableTest {
 protected:
  void SetUp() override {
    const bool pg = GetParam().dialect == dialect_kind::postgresql;
    script_ = test_setting("SQLLOCK_TEST_SERVERS_SCRIPT").value_or("");
    state_ = test_setting("SQLLOCK_TEST_STATE_DIR").value_or("");
    // Only servers that scripts/test-servers.sh started can be restarted by it.
    if (script_.empty() || state_.empty() || !test_setting(pg ? "SQLLOCK_TEST_PG_DATA" : "SQLLOCK_TEST_MY_DATA"))
      GTEST_SKIP() << "the " << (pg ? "PostgreSQL" : "MariaDB") << " server was not started by test-servers.sh";
    server_ = pg ? "pg" : "my";
    LockTableTest::SetUp();
    dir_ = make_temp_dir("sqllock-reaper-restart");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Runs test-servers.sh <action>-<server> on the test servers.
  void server(const std::string& action) {
    const auto r = run_program({script_, action + "-" + server_, state_}, dir_, {}, 180s);
    ASSERT_EQ(r.code, 0) << action << ": " << r.out << r.err;
  }

  std::vector<std::string> daemon_args() const {
    return {SQLLOCK_REAPER, "--interval", "200ms", "--db", GetParam().uri, "--table", table_};
  }

  // Stops the daemon with SIGTERM and expects a clean exit within a second.
  void stop(program& p) {
    ASSERT_TRUE(p.running()) << "the daemon died: " << p.err();
    const auto sent = steady::now();
    ::kill(p.pid(), SIGTERM);
    EXPECT_EQ(p.wait(5s), 0) << p.err();
    EXPECT_LT(steady::now() - sent, scaled(1s)) << p.out() << p.err();
  }

  std::string script_, state_, server_;
  fs::path dir_;
};

TEST_P(ReaperRestartTest, TheDaemonSurvivesAServerRestart) {
  program p(daemon_args(), dir_);
  ASSERT_TRUE(eventually([&] { return count_events(p.out(), {"event=pass"}) >= 1; }, 20s)) << p.err();
  server("restart");
  // Rows that expire after the restart are still reaped by the same process.
  auto db = open();
  insert_rows(db, {.prefix = "after-restart-", .count = 50, .expires_in = -1s});
  EXPECT_TRUE(eventually([&] { return rows(db) == 0; }, 30s)) << p.out() << p.err();
  // A pass that hit the restart is logged as an error and followed by a recovery.
  if (count_events(p.err(), {"level=error", "event=pass"}) > 0) {
    EXPECT_TRUE(eventually([&] { return count_events(p.out(), {"event=recovered"}) >= 1; }, 10s)) << p.out();
  }
  stop(p);
}

TEST_P(ReaperRestartTest, WhileTheServerIsDownFailuresAreLoggedWithBackoffAndRecoveryFollows) {
  program p(daemon_args(), dir_);
  ASSERT_TRUE(eventually([&] { return count_events(p.out(), {"event=pass"}) >= 1; }, 20s)) << p.err();
  server("stop");
  // Retries back off from 1 s, capped at the interval (200 ms here, jittered down to half).
  const bool failed = eventually([&] { return count_events(p.err(), {"level=error", "event=pass"}) >= 3; }, 30s);
  server("start");
  ASSERT_TRUE(failed) << p.err();
  const auto delays = retry_delays(p.err());
  ASSERT_GE(delays.size(), 3u);
  for (const auto d : delays) {
    EXPECT_GE(d, 100);
    EXPECT_LE(d, 200) << "a retry never waits longer than the interval";
  }
  EXPECT_NE(p.err().find("database unreachable"), std::string::npos) << p.err();

  auto db = open();
  insert_rows(db, {.prefix = "after-outage-", .count = 20, .expires_in = -1s});
  EXPECT_TRUE(eventually([&] { return rows(db) == 0; }, 30s)) << p.out() << p.err();
  // The pass commits its DELETE before it writes its log lines: wait for the line, then check that
  // the outage was reported as exactly one recovery.
  EXPECT_TRUE(eventually([&] { return count_events(p.out(), {"event=recovered"}) >= 1; }, 10s)) << p.out();
  EXPECT_EQ(count_events(p.out(), {"event=recovered"}), 1) << p.out();
  stop(p);
}

INSTANTIATE_TEST_SUITE_P(ServerTargets, ReaperRestartTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
