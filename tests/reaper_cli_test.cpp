// sqllock-reaper as a program (SQLLOCK_REAPER) on every driver × dialect pair: --once for cron,
// --interval as a daemon that stops within a second of SIGTERM/SIGINT, metrics, log lines, exit
// codes, and the exact command lines shipped in docs/sqllock-reaper.service and
// docs/operations.md.
#include <unistd.h>

#include <csignal>
#include <thread>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/dead_port.hpp"
#include "support/fresh_database.hpp"
#include "support/lock_fixture.hpp"
#include "support/lock_rows.hpp"
#include "support/log_events.hpp"
#include "support/program.hpp"
#include "support/temp_dir.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Prometheus text: sample name (labels included) → value.
std::map<std::string, std::string> parse_metrics(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.rfind(' ');
    out[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return out;
}

std::string metric(const std::map<std::string, std::string>& m, const std::string& name, const std::string& table) {
  const auto it = m.find(name + "{table=\"" + table + "\"}");
  return it == m.end() ? "<missing>" : it->second;
}

// Words of a command line, as systemd splits ExecStart (no quoting used in the shipped unit),
// with ${NAME} and $NAME replaced from `vars`.
std::vector<std::string> split_command(const std::string& line, const std::map<std::string, std::string>& vars) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) {
    for (const auto& [k, v] : vars) {
      for (const std::string& ref : {"${" + k + "}", "$" + k})
        for (std::size_t p; (p = w.find(ref)) != std::string::npos;) w.replace(p, ref.size(), v);
    }
    EXPECT_EQ(w.find('$'), std::string::npos) << "unexpanded variable in " << line;
    words.push_back(w);
  }
  return words;
}

class ReaperCliTest : public LockTableTest {
 protected:
  void SetUp() override {
    LockTableTest::SetUp();
    dir_ = make_temp_dir("sqllock-reaper-cli");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> reaper(std::vector<std::string> args) const {
    args.insert(args.begin(), SQLLOCK_REAPER);
    args.insert(args.end(), {"--db", GetParam().uri, "--table", table_});
    return args;
  }

  fs::path dir_;
};

TEST_P(ReaperCliTest, OncePassDeletesExpiredRowsAndWritesMetrics) {
  auto db = open();
  insert_rows(db, {.prefix = "dead-", .count = 1234, .expires_in = -1min});
  insert_rows(db, {.prefix = "live-", .count = 7, .expires_in = 1h});
  const auto metrics_file = dir_ / "reaper.prom";
  const auto before = std::chrono::system_clock::now();
  const auto r = run_program(reaper({"--once", "--batch", "100", "--metrics-file", metrics_file.string()}), dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(rows(db), 7);
  EXPECT_EQ(count_events(r.out, {"level=info", "event=pass", "table=" + table_, "reaped=1234", "errors_total=0"}), 1)
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(event=pass .*duration_ms=\d+\.\d{3})"))) << r.out;
  EXPECT_EQ(r.err, "");

  const auto m = parse_metrics(read_text(metrics_file));
  EXPECT_EQ(metric(m, "sqllock_reaper_passes_total", table_), "1");
  EXPECT_EQ(metric(m, "sqllock_reaper_rows_reaped_total", table_), "1234");
  EXPECT_EQ(metric(m, "sqllock_reaper_errors_total", table_), "0");
  EXPECT_GT(std::stod(metric(m, "sqllock_reaper_last_pass_duration_seconds", table_)), 0.0);
  const double success = std::stod(metric(m, "sqllock_reaper_last_success_timestamp_seconds", table_));
  EXPECT_GE(success, std::chrono::duration<double>(before.time_since_epoch()).count() - 1);
  EXPECT_LE(success, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() + 1);
  // Every metric has HELP and TYPE lines, and the temporary file is gone.
  const auto text = read_text(metrics_file);
  EXPECT_EQ(std::count(text.begin(), text.end(), '#'), 10) << text;
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.path().filename().string().rfind("reaper.prom", 0) == 0;
  EXPECT_EQ(files, 1) << "a temporary metrics file was left behind";
}

TEST_P(ReaperCliTest, DaemonReapsEveryIntervalAndStopsWithinOneSecondOfSigterm) {
  auto db = open();
  const auto metrics_file = dir_ / "m.prom";
  program p(reaper({"--interval", "150ms", "--metrics-file", metrics_file.string()}), dir_);
  ASSERT_TRUE(eventually([&] { return count_events(p.out(), {"event=pass"}) >= 1; }, 20s)) << p.err();
  insert_rows(db, {.prefix = "later-", .count = 40, .expires_in = -1s});
  ASSERT_TRUE(eventually([&] { return rows(db) == 0; }, 20s)) << "the daemon did not reap new rows";
  ASSERT_TRUE(eventually([&] { return count_events(p.out(), {"event=pass"}) >= 3; }, 20s)) << p.out();
  EXPECT_TRUE(eventually(
      [&] {
        return metric(parse_metrics(read_text(metrics_file)), "sqllock_reaper_rows_reaped_total", table_) == "40";
      },
      5s));

  const auto sent = steady::now();
  ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);
  EXPECT_EQ(p.wait(5s), 0) << p.err();
  EXPECT_LT(steady::now() - sent, scaled(1s));
  EXPECT_EQ(count_events(p.out(), {"event=stop", "signal=SIGTERM"}), 1) << p.out();
  EXPECT_EQ(count_events(p.err(), {"level=error"}), 0) << p.err();
}

TEST_P(ReaperCliTest, SigintStopsTheDaemonToo) {
  program p(reaper({"--interval", "10s"}), dir_);
  ASSERT_TRUE(eventually([&] { return count_events(p.out(), {"event=pass"}) >= 1; }, 20s)) << p.err();
  const auto sent = steady::now();
  ASSERT_EQ(::kill(p.pid(), SIGINT), 0);
  EXPECT_EQ(p.wait(5s), 0) << p.err();
  EXPECT_LT(steady::now() - sent, scaled(1s)) << "the daemon must not sleep out its interval";
  EXPECT_EQ(count_events(p.out(), {"event=stop", "signal=SIGINT"}), 1) << p.out();
}

// The unit file's ExecStart, run as systemd would (variables from Environment=, SQLLOCK_DB from
// the EnvironmentFile), with only the program path and the metrics path moved into the test.
TEST_P(ReaperCliTest, TheShippedSystemdUnitCommandLineWorks) {
  std::ifstream unit(SQLLOCK_DOCS_DIR "/sqllock-reaper.service");
  ASSERT_TRUE(unit) << "docs/sqllock-reaper.service is missing";
  std::string exec_start;
  std::map<std::string, std::string> unit_env;
  for (std::string line; std::getline(unit, line);) {
    if (line.rfind("ExecStart=", 0) == 0) exec_start = line.substr(10);
    if (line.rfind("Environment=", 0) == 0) {
      const auto kv = line.substr(12);
      unit_env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    }
  }
  ASSERT_FALSE(exec_start.empty());
  ASSERT_EQ(unit_env.count("SQLLOCK_REAPER_METRICS"), 1u);
  const auto metrics_file = dir_ / "unit.prom";
  auto words = split_command(exec_start, {{"SQLLOCK_REAPER_METRICS", metrics_file.string()}});
  ASSERT_TRUE(words.at(0).ends_with("/sqllock-reaper")) << exec_start;
  words[0] = SQLLOCK_REAPER;

  // The unit uses the default table name, so it gets a database of its own.
  const auto fresh = fresh_database(GetParam());
  database owner(fresh.owner_uri);
  migrate(owner);
  database db(fresh.uri);
  insert_rows(db, {.prefix = "dead-", .count = 25, .expires_in = -10s});
  insert_rows(db, {.prefix = "live-", .count = 2, .expires_in = 1h});

  program p(words, dir_, {{"SQLLOCK_DB", fresh.uri}});
  ASSERT_TRUE(eventually([&] { return count_events(p.out(), {"event=pass"}) >= 1; }, 20s)) << p.err();
  EXPECT_EQ(count_events(p.out(), {"event=pass", "table=distributed_lock", "reaped=25"}), 1) << p.out();
  EXPECT_EQ(count_events(p.out(), {"event=start", "mode=interval", "interval_ms=30000", "batch=1000"}), 1) << p.out();
  // The pass is logged before the metrics file is replaced, so the file may lag the log line.
  EXPECT_TRUE(eventually(
      [&] {
        return metric(parse_metrics(read_text(metrics_file)), "sqllock_reaper_rows_reaped_total", "distributed_lock") ==
               "25";
      },
      5s));
  EXPECT_EQ(std::stoll(sql(db, "SELECT COUNT(*) FROM distributed_lock").rows.at(0).at(0).value()), 2);
  const auto sent = steady::now();
  ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);  // systemd's KillSignal
  EXPECT_EQ(p.wait(5s), 0) << p.err();
  EXPECT_LT(steady::now() - sent, scaled(1s));
}

// The cron line of docs/operations.md, run through /bin/sh as cron does.
TEST_P(ReaperCliTest, TheDocumentedCronLineWorks) {
  std::ifstream doc(SQLLOCK_DOCS_DIR "/operations.md");
  ASSERT_TRUE(doc) << "docs/operations.md is missing";
  const std::regex cron_line(R"(^(\S+\s+){5}(\S+)\s+(/\S*sqllock-reaper\s.*)$)");
  std::string command;
  for (std::string line; std::getline(doc, line);) {
    std::smatch m;
    if (std::regex_match(line, m, cron_line)) command = m[3];
  }
  ASSERT_FALSE(command.empty()) << "no cron line in docs/operations.md";
  const std::string installed = command.substr(0, command.find(' '));
  command.replace(0, installed.size(), SQLLOCK_REAPER);
  ASSERT_NE(command.find("--once"), std::string::npos) << command;

  const auto fresh = fresh_database(GetParam());
  database owner(fresh.owner_uri);
  migrate(owner);
  database db(fresh.uri);
  insert_rows(db, {.prefix = "dead-", .count = 30, .expires_in = -10min});
  insert_rows(db, {.prefix = "recent-", .count = 4, .expires_in = -5s});  // within the line's grace

  const auto r = run_program({"/bin/sh", "-c", command}, dir_, {{"SQLLOCK_DB", fresh.uri}});
  ASSERT_EQ(r.code, 0) << command << "\n" << r.err;
  // cron mails any output: a successful pass through the documented line prints nothing.
  EXPECT_EQ(r.out, "") << command;
  EXPECT_EQ(r.err, "") << command;
  EXPECT_EQ(std::stoll(sql(db, "SELECT COUNT(*) FROM distributed_lock").rows.at(0).at(0).value()), 4);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, ReaperCliTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

// Exit codes and failure handling that need no particular server.
class ReaperCliErrors : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("sqllock-reaper-errors"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string sqlite_db() const { return "sqlite://" + (dir_ / "locks.db").string(); }
  fs::path dir_;
};

TEST_F(ReaperCliErrors, UsageErrorsExitTwo) {
  const std::string db = sqlite_db();
  const auto help = run_program({SQLLOCK_REAPER, "--help"}, dir_);
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("usage: sqllock-reaper"), std::string::npos);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--db", db},                                // neither --once nor --interval
           {"--db", db, "--once", "--interval", "1s"},  // both
           {"--db", db, "--interval", "5x"},            // bad duration
           {"--db", db, "--interval", "0s"},            // zero interval
           {"--db", db, "--once", "--batch", "0"},      // batch out of range
           {"--db", db, "--once", "--batch", "100001"},
           {"--db", db, "--once", "--grace", "soon"},
           {"--db", db, "--once", "--frobnicate"},         // unknown option
           {"--db", db, "--once", "--table", "bad-name"},  // rejected by the library
           {"--db", "nosuchdb://x", "--interval", "1s"},   // unknown scheme: no retrying
           {"--once"},                                     // no database at all
       }) {
    std::vector<std::string> argv{SQLLOCK_REAPER};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run_program(argv, dir_, {{"SQLLOCK_DB", ""}}, 10s);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.code, 2) << joined << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << joined;
  }
}

TEST_F(ReaperCliErrors, OnceReportsAMissingTableAndAnUnreachableDatabase) {
  const auto missing = run_program({SQLLOCK_REAPER, "--once", "--db", sqlite_db()}, dir_);
  EXPECT_EQ(missing.code, 4) << missing.err;
  EXPECT_EQ(count_events(missing.err, {"level=error", "event=pass"}), 1) << missing.err;
  EXPECT_NE(missing.err.find("sqllock migrate"), std::string::npos) << missing.err;

  const dead_port refusing;
  const auto metrics_file = dir_ / "m.prom";
  const auto down = run_program(
      {SQLLOCK_REAPER, "--once", "--db", refusing.uri("postgresql"), "--metrics-file", metrics_file.string()}, dir_);
  EXPECT_EQ(down.code, 3) << down.err;
  EXPECT_NE(down.err.find("database unreachable"), std::string::npos) << down.err;
  const auto m = parse_metrics(read_text(metrics_file));
  EXPECT_EQ(metric(m, "sqllock_reaper_errors_total", "distributed_lock"), "1");
  EXPECT_EQ(metric(m, "sqllock_reaper_last_success_timestamp_seconds", "distributed_lock"), "0.000");

  const auto unwritable = run_program(
      {SQLLOCK_REAPER, "--once", "--db", sqlite_db(), "--metrics-file", (dir_ / "no/such/dir/m.prom").string()}, dir_);
  EXPECT_EQ(unwritable.code, 2) << unwritable.err;
}

// Against a database that refuses connections the daemon keeps running, logging each failed pass
// and retrying after 1 s, then 2 s … (jittered down to half), capped at the interval.
TEST_F(ReaperCliErrors, FailedPassesAreRetriedWithCappedExponentialBackoff) {
  const dead_port refusing;
  program p({SQLLOCK_REAPER, "--interval", "1500ms", "--db", refusing.uri("postgresql")}, dir_);
  const auto delays = [&] {
    std::vector<long long> out;
    std::istringstream in(p.err());
    for (std::string line; std::getline(in, line);)
      if (const auto at = line.find(" retry_in_ms="); at != std::string::npos)
        out.push_back(std::stoll(line.substr(at + 13)));
    return out;
  };
  ASSERT_TRUE(eventually([&] { return delays().size() >= 3; }, 15s)) << p.err();
  const auto d = delays();
  EXPECT_GE(d[0], 500);
  EXPECT_LE(d[0], 1000);
  EXPECT_GE(d[1], 750) << "the second delay is capped at the 1.5 s interval";
  EXPECT_LE(d[1], 1500);
  EXPECT_GE(d[2], 750);
  EXPECT_LE(d[2], 1500);
  EXPECT_EQ(count_events(p.err(), {"level=error", "event=pass", "errors_total=3"}), 1) << p.err();
  ASSERT_TRUE(p.running());
  ::kill(p.pid(), SIGTERM);
  EXPECT_EQ(p.wait(5s), 0);
}

// A server that accepts connections and never answers: the pass hangs in the connection
// handshake, yet SIGTERM still ends the daemon within a second.
TEST_F(ReaperCliErrors, SigtermEndsTheDaemonEvenWhileADatabaseCallHangs) {
  const dead_port silent(/*listening=*/true);
  program p({SQLLOCK_REAPER, "--interval", "1s", "--db", silent.uri("postgresql")}, dir_);
  ASSERT_TRUE(eventually([&] { return count_events(p.out(), {"event=start"}) == 1; }, 10s)) << p.err();
  std::this_thread::sleep_for(300ms);  // now inside the handshake (the connect timeout is 5 s)
  ASSERT_TRUE(p.running());
  const auto sent = steady::now();
  ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);
  EXPECT_EQ(p.wait(5s), 0) << p.err();
  EXPECT_LT(steady::now() - sent, scaled(1s));
  EXPECT_EQ(count_events(p.err(), {"event=forced_exit"}), 1) << p.err();
}

}  // namespace
}  // namespace sqllock::test
