// `sqllock latch create|count-down|wait|status` as a program (SQLLOCK_CLI) on every driver ×
// dialect pair: what each prints, its exit codes (0 done, 1 not done, 7 absent, 2 usage), JSON
// status, and a waiter process that another process's count-down opens.
#include <thread>

#include "sqllock/latch.hpp"
#include "support/json.hpp"
#include "support/lock_fixture.hpp"
#include "support/program.hpp"
#include "support/temp_dir.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class LatchCliTest : public LockTableTest {
 protected:
  void SetUp() override {
    LockTableTest::SetUp();
    dir_ = make_temp_dir("sqllock-latch-cli");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> argv(std::vector<std::string> args) const {
    args.insert(args.begin(), {SQLLOCK_CLI, "latch"});
    args.insert(args.end(), {"--db", GetParam().uri, "--table", table_});
    return args;
  }
  // Runs `sqllock latch <args…> --db URI --table T`.
  run_result cli(const std::vector<std::string>& args) { return run_program(argv(args), dir_); }

  static bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

  fs::path dir_;
};

TEST_P(LatchCliTest, CreateCountDownAndWaitWithTheirExitCodes) {
  auto r = cli({"create", "job", "2"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "armed latch 'job' with count 2 (generation 1)")) << r.out;
  r = cli({"create", "job", "5"});
  EXPECT_EQ(r.code, 1) << "an armed latch is not re-armed";
  EXPECT_TRUE(has(r.err, "not re-armed")) << r.err;
  r = cli({"wait", "job", "--timeout", "0.1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.err, "timed out")) << r.err;
  r = cli({"count-down", "job", "--participant", "a"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "counted down latch 'job': 1 to go")) << r.out;
  r = cli({"count-down", "job", "--participant", "a"});
  EXPECT_EQ(r.code, 0) << "a retry succeeds without counting";
  EXPECT_TRUE(has(r.out, "participant 'a' was already counted; 1 to go")) << r.out;
  r = cli({"count-down", "job"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, ": open")) << r.out;
  r = cli({"wait", "job"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "latch 'job' is open")) << r.out;
  r = cli({"count-down", "job"});
  EXPECT_EQ(r.code, 1) << "one count-down too many counts nothing";
  EXPECT_TRUE(has(r.err, "already open")) << r.err;
  r = cli({"create", "job", "1"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "(generation 2)")) << r.out;
}

TEST_P(LatchCliTest, AnAbsentLatchExitsSevenNeverZero) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"wait", "missing"},
                                               {"wait", "missing", "--timeout", "10"},
                                               {"count-down", "missing"},
                                               {"count-down", "missing", "--participant", "p"},
                                               {"status", "missing"}}) {
    const auto r = cli(args);
    EXPECT_EQ(r.code, 7) << args[0] << ": " << r.err;
    EXPECT_TRUE(has(r.err, "absent")) << r.err;
  }
  const auto r = cli({"status", "missing", "--json"});
  EXPECT_EQ(r.code, 7);
  const auto j = parse_json(r.out);
  EXPECT_EQ(j["latch"].as_string(), "missing");
  EXPECT_EQ(j["state"].as_string(), "absent");
  // A latch whose ttl ran out is absent too.
  ASSERT_EQ(cli({"create", "brief", "1", "--ttl", "100ms"}).code, 0);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(cli({"wait", "brief"}).code, 7);
}

TEST_P(LatchCliTest, StatusShowsTheLatchAsTextAndJson) {
  ASSERT_EQ(cli({"create", "report", "3", "--ttl", "1h"}).code, 0);
  ASSERT_EQ(cli({"count-down", "report", "--participant", "loader \"1\"\n"}).code, 0);
  ASSERT_EQ(cli({"count-down", "report"}).code, 0);
  auto r = cli({"status", "report"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "latch 'report', generation 1: armed, 1 of 3 to go")) << r.out;
  EXPECT_TRUE(has(r.out, "ttl runs out in")) << r.out;
  EXPECT_TRUE(has(r.out, "participants counted: 1: loader \"1\"\\n")) << "escaped, one line: " << r.out;
  r = cli({"status", "report", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = parse_json(r.out);
  EXPECT_EQ(j["latch"].as_string(), "report");
  EXPECT_EQ(j["state"].as_string(), "armed");
  EXPECT_EQ(j["count"].as_int(), 1);
  EXPECT_EQ(j["initial"].as_int(), 3);
  EXPECT_EQ(j["generation"].as_int(), 1);
  EXPECT_EQ(j["armed_at"].as_string().size(), 24u);
  EXPECT_EQ(j["opened_at"].type, json::kind::null);
  EXPECT_GT(j["expires_in_ms"].as_int(), 3500000);
  ASSERT_EQ(j["arrived"].items.size(), 1u);
  EXPECT_EQ(j["arrived"][0].as_string(), "loader \"1\"\n");
  ASSERT_EQ(cli({"count-down", "report"}).code, 0);
  const auto open = parse_json(cli({"status", "report", "--json"}).out);
  EXPECT_EQ(open["state"].as_string(), "open");
  EXPECT_EQ(open["count"].as_int(), 0);
  EXPECT_EQ(open["opened_at"].as_string().size(), 24u);
  EXPECT_EQ(open["expires_in_ms"].type, json::kind::null);
}

TEST_P(LatchCliTest, AWaitingProcessReturnsWhenAnotherOpensTheLatch) {
  ASSERT_EQ(cli({"create", "gate", "1"}).code, 0);
  program waiter(argv({"wait", "gate", "--timeout", "120"}), dir_);
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(waiter.running()) << "it waits while the latch is armed";
  ASSERT_EQ(cli({"count-down", "gate"}).code, 0);
  EXPECT_EQ(waiter.wait(60s), 0) << waiter.err();
  EXPECT_TRUE(has(waiter.out(), "is open"));
}

TEST_P(LatchCliTest, BadCommandLinesAreUsageErrorsAndChangeNothing) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{},
                                               {"arm", "x", "1"},
                                               {"create", "x"},
                                               {"create", "x", "zero"},
                                               {"create", "x", "0"},
                                               {"create", "x", "1000001"},
                                               {"create", "x", "-3"},
                                               {"create", "x", "1", "extra"},
                                               {"create", "x", "1", "--ttl", "0"},
                                               {"create", "x", "1", "--timeout", "1"},
                                               {"wait"},
                                               {"wait", "x", "--ttl", "1s"},
                                               {"count-down", "x", "--json"},
                                               {"status", "x", "--participant", "p"},
                                               {"count-down", "x", "--participant", ""},
                                               {"create", "", "1"},
                                               {"create", "x", "1", "--bogus"}}) {
    const auto r = cli(args);
    EXPECT_EQ(r.code, 2) << "latch " << ::testing::PrintToString(args) << ": " << r.err;
  }
  auto db = open();
  EXPECT_EQ(latch(db, "x").state(), std::nullopt) << "nothing was created";
  // A name that starts with '-' goes after "--".
  const auto r = run_program(
      {SQLLOCK_CLI, "latch", "--db", GetParam().uri, "--table", table_, "create", "--", "-dash", "1"}, dir_);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(latch(db, "-dash").state());
  const auto help = run_program({SQLLOCK_CLI, "latch", "--help"}, dir_);
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(has(help.out, "usage: sqllock latch create NAME COUNT"));
}

INSTANTIATE_TEST_SUITE_P(AllTargets, LatchCliTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
