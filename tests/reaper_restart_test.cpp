// sqllock-reaper as a daemon while its database server restarts or stays down for a while
// (scripts/test-servers.sh restart-pg / stop-my …). These tests disturb every test using the same
// servers, so ctest runs this program on its own (RUN_SERIAL).
#include <csignal>
#include <sstream>

#include "support/lock_fixture.hpp"
#include "support/lock_rows.hpp"
#include "support/log_events.hpp"
#include "support/program.hpp"
#include "support/server_control.hpp"
#include "support/temp_dir.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

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
    // Only servers that scripts/test-servers.sh started can be restarted by it.
    server_ = server_control::for_tests(GetParam());
    if (!server_)
      GTEST_SKIP() << "the " << (GetParam().dialect == dialect_kind::postgresql ? "PostgreSQL" : "MariaDB")
                   << " server was not started by test-servers.sh";
    LockTableTest::SetUp();
    dir_ = make_temp_dir("sqllock-reaper-restart");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Runs test-servers.sh <action>-<server> on the test servers.
  void server(const std::string& action) { server_->must({action}); }

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

  std::optional<server_control> server_;
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
