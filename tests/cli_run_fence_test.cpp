// What `sqllock run` gives its command to protect the data it writes, and how it stops it when
// the lock is lost: the SQLLOCK_* variables (fencing token, name, kind, lease) checked against the
// lock tables, a fenced write from a shell script that a later holder's write fences out, the
// SIGKILL after --kill-after, and a SIGTERM at the lease's local deadline while the renewal
// statement hangs. Real CLI processes (SQLLOCK_CLI) against every driver × dialect pair.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sqllock/database.hpp"
#include "support/fresh_database.hpp"
#include "support/program.hpp"
#include "support/tcp_proxy.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

// A shell snippet that waits (up to 60 s) until `file` exists.
std::string wait_for(const fs::path& file) {
  return "i=0; while [ ! -e '" + file.string() + "' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done";
}

// A shell snippet that writes the command's environment to `file` (complete once it exists).
std::string dump_env(const fs::path& file) {
  return "env > '" + file.string() + ".tmp' && mv '" + file.string() + ".tmp' '" + file.string() + "'";
}

// NAME=VALUE lines (as `env` prints them) as a map.
std::map<std::string, std::string> parse_env(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (const auto eq = line.find('='); eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  return out;
}

// The value of `name` in `env`, or "<unset>".
std::string var(const std::map<std::string, std::string>& env, const std::string& name) {
  const auto it = env.find(name);
  return it == env.end() ? "<unset>" : it->second;
}

class CliRunFenceTest : public ::testing::TestWithParam<target> {
 protected:
  void SetUp() override {
    SQLLOCK_REQUIRE_SERVER(GetParam().uri);
    dir_ = make_temp_dir("sqllock-fence");
    table_ = unique_name("fence");
    const auto r = run_program({SQLLOCK_CLI, "migrate", "--db", GetParam().owner_uri, "--table", table_}, dir_);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // `sqllock run --db … --table … OPTIONS… -- sh -c SCRIPT`
  std::vector<std::string> run_args(std::vector<std::string> options, const std::string& script,
                                    const std::string& uri = "") const {
    std::vector<std::string> a{SQLLOCK_CLI, "run", "--db", uri.empty() ? GetParam().uri : uri, "--table", table_};
    a.insert(a.end(), options.begin(), options.end());
    a.insert(a.end(), {"--", "sh", "-c", script});
    return a;
  }
  // One field of the first row of `statement` on the lock database.
  std::string scalar(const std::string& statement, std::vector<detail::value> params) const {
    database_options o;
    o.table = table_;
    const database db(GetParam().uri, o);
    const auto r = sql(db, statement, std::move(params));
    if (r.rows.empty() || !r.rows[0][0]) return "<none>";
    return *r.rows[0][0];
  }
  // Runs SCRIPT under the lock, waits until it has written its environment, hands it to `check`
  // while the lock is still held, then lets the command exit.
  void while_held(std::vector<std::string> options, const std::map<std::string, std::string>& extra_env,
                  const std::function<void(const std::map<std::string, std::string>&)>& check) {
    const auto env_file = dir_ / "env", release = dir_ / "release";
    fs::remove(env_file);
    fs::remove(release);
    program p(run_args(std::move(options), dump_env(env_file) + "; " + wait_for(release)), dir_, extra_env);
    ASSERT_TRUE(eventually([&] { return fs::exists(env_file) || !p.running(); }, 30s));
    ASSERT_TRUE(fs::exists(env_file)) << "the command did not run: " << p.err();
    check(parse_env(read_text(env_file)));
    std::ofstream(release).put('\n');
    EXPECT_EQ(p.wait(), 0) << p.err();
  }

  fs::path dir_;
  std::string table_;
};

TEST_P(CliRunFenceTest, ATableLocksCommandIsToldItsFenceNameKindAndLease) {
  std::string first;
  // Variables an outer `sqllock run` set are not passed on: the command sees this run's only.
  while_held({"--lock", "report", "--ttl", "2s"}, {{"SQLLOCK_SLOT", "stale"}, {"SQLLOCK_FENCE_2", "stale"}},
             [&](const auto& env) {
               first = var(env, "SQLLOCK_FENCE");
               EXPECT_EQ(first, scalar("SELECT fence FROM " + table_ + " WHERE resource = $1", {std::string("report")}))
                   << "the fence of the lock's row";
               EXPECT_EQ(var(env, "SQLLOCK_NAME"), "report");
               EXPECT_EQ(var(env, "SQLLOCK_KIND"), "table");
               EXPECT_EQ(var(env, "SQLLOCK_LEASE_MS"), "2000");
               for (const char* absent : {"SQLLOCK_SLOT", "SQLLOCK_MODE", "SQLLOCK_NAME_COUNT", "SQLLOCK_FENCE_2"})
                 EXPECT_EQ(var(env, absent), "<unset>") << absent;
             });
  while_held({"--lock", "report"}, {}, [&](const auto& env) {
    EXPECT_GT(std::stoll(var(env, "SQLLOCK_FENCE")), std::stoll(first)) << "a later holder has a larger fence";
    EXPECT_EQ(var(env, "SQLLOCK_LEASE_MS"), "30000") << "the default --ttl";
  });
}

TEST_P(CliRunFenceTest, SeveralLocksAndASemaphoreTellEachFence) {
  while_held({"--lock", "b", "--lock", "a"}, {}, [&](const auto& env) {
    EXPECT_EQ(var(env, "SQLLOCK_NAME_COUNT"), "2");
    EXPECT_EQ(var(env, "SQLLOCK_NAME_1"), "b") << "in the order given";
    EXPECT_EQ(var(env, "SQLLOCK_NAME_2"), "a");
    const auto fence_of = [&](const std::string& name) {
      return scalar("SELECT fence FROM " + table_ + " WHERE resource = $1", {name});
    };
    EXPECT_EQ(var(env, "SQLLOCK_FENCE_1"), fence_of("b"));
    EXPECT_EQ(var(env, "SQLLOCK_FENCE_2"), fence_of("a"));
    EXPECT_EQ(var(env, "SQLLOCK_NAME"), "b");
    EXPECT_EQ(var(env, "SQLLOCK_FENCE"), fence_of("b")) << "SQLLOCK_FENCE is the first name's";
  });
  while_held({"--lock", "encoder", "--kind", "semaphore", "--permits", "3"}, {}, [&](const auto& env) {
    EXPECT_EQ(var(env, "SQLLOCK_KIND"), "semaphore");
    const std::string slot = var(env, "SQLLOCK_SLOT");
    EXPECT_EQ(slot, scalar("SELECT slot FROM " + table_ + "_permits WHERE resource = $1", {std::string("encoder")}));
    EXPECT_EQ(var(env, "SQLLOCK_FENCE"),
              scalar("SELECT fence FROM " + table_ + "_permits WHERE resource = $1", {std::string("encoder")}));
  });
  while_held({"--lock", "catalog", "--kind", "rw", "--shared"}, {}, [&](const auto& env) {
    EXPECT_EQ(var(env, "SQLLOCK_KIND"), "rw");
    EXPECT_EQ(var(env, "SQLLOCK_MODE"), "shared");
    EXPECT_NE(var(env, "SQLLOCK_FENCE"), "<unset>");
  });
}

// The kinds held by a database session have no fencing token and no lease: those variables are
// absent (never empty), whatever the environment had.
TEST_P(CliRunFenceTest, SessionKindsHaveNoFenceAndNoLease) {
  const std::string kind = GetParam().dialect == dialect_kind::postgresql ? "advisory"
                           : GetParam().dialect == dialect_kind::mysql    ? "named"
                                                                          : "";
  if (kind.empty()) GTEST_SKIP() << "no session lock kind on SQLite";
  if (GetParam().transaction_pooler) GTEST_SKIP() << "session locks are refused behind a transaction-mode pooler";
  for (const std::string& k : {kind, std::string("row")}) {
    const std::string name = unique_name("sess");
    while_held({"--lock", name, "--kind", k}, {{"SQLLOCK_FENCE", "7"}, {"SQLLOCK_LEASE_MS", "1"}},
               [&](const auto& env) {
                 EXPECT_EQ(var(env, "SQLLOCK_KIND"), k);
                 EXPECT_EQ(var(env, "SQLLOCK_NAME"), name);
                 EXPECT_EQ(var(env, "SQLLOCK_FENCE"), "<unset>") << k << ": the outer run's fence is removed";
                 EXPECT_EQ(var(env, "SQLLOCK_LEASE_MS"), "<unset>") << k;
               });
  }
}

// The README's pattern: the command stores SQLLOCK_FENCE beside the data and writes only where the
// stored fence is not larger. Holder A loses its lock (its row is deleted), ignores the SIGTERM and
// writes late — after B, which got the lock with a larger fence, has written: A's write is
// refused. The protected data lives in a SQLite file, written with the sqlite3 shell.
TEST_P(CliRunFenceTest, AFencedWriteFromAShellScriptRefusesAStaleHolder) {
  const auto data = dir_ / "data.db";
  ASSERT_EQ(run_program({"/usr/bin/env", "sqlite3", data.string(),
                         "CREATE TABLE report (id INTEGER PRIMARY KEY, body TEXT, fence INTEGER NOT NULL);"
                         "INSERT INTO report VALUES (1, 'none', 0);"},
                        dir_)
                .code,
            0);
  const auto write = dir_ / "write.sh";
  std::ofstream(write) << "n=$(sqlite3 -cmd '.timeout 5000' '" << data.string()
                       << "' \"UPDATE report SET body = '$1', fence = $SQLLOCK_FENCE"
                          " WHERE id = 1 AND fence <= $SQLLOCK_FENCE; SELECT changes();\")\n"
                          "if [ \"$n\" = 1 ]; then echo written; else echo 'fenced out'; exit 1; fi\n";
  const auto ready = dir_ / "ready", go = dir_ / "go", result_a = dir_ / "a", result_b = dir_ / "b";

  program a(run_args({"--lock", "data", "--ttl", "1s", "--kill-after", "60s"},
                     "trap '' TERM; touch '" + ready.string() + "'; " + wait_for(go) + "; sh '" + write.string() +
                         "' A > '" + result_a.string() + "'"),
            dir_);
  ASSERT_TRUE(eventually([&] { return fs::exists(ready) || !a.running(); }, 30s));
  ASSERT_TRUE(a.running()) << a.err();
  {
    database_options o;
    o.table = table_;
    const database db(GetParam().uri, o);
    EXPECT_EQ(sql(db, "DELETE FROM " + table_ + " WHERE resource = $1", {std::string("data")}).affected, 1u);
  }
  ASSERT_TRUE(eventually([&] { return a.err().find("lost while the command was running") != std::string::npos; }, 10s))
      << a.err();
  const auto b = run_program(
      run_args({"--lock", "data"}, "sh '" + write.string() + "' B > '" + result_b.string() + "'"), dir_);
  EXPECT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(read_text(result_b), "written\n");
  std::ofstream(go).put('\n');
  EXPECT_EQ(a.wait(), 5) << "the lock was lost: " << a.err();
  EXPECT_EQ(read_text(result_a), "fenced out\n") << "A's late write was refused";
  EXPECT_EQ(run_program({"/usr/bin/env", "sqlite3", data.string(), "SELECT body FROM report WHERE id = 1"}, dir_).out,
            "B\n");
}

TEST_P(CliRunFenceTest, ACommandIgnoringSigtermIsKilledAfterKillAfter) {
  const auto ready = dir_ / "ready", pidfile = dir_ / "pid";
  program p(run_args({"--lock", "stubborn", "--ttl", "1s", "--kill-after", "1500ms"},
                     "echo $$ > '" + pidfile.string() + "'; trap '' TERM; touch '" + ready.string() + "'; " +
                         wait_for(dir_ / "never")),
            dir_);
  ASSERT_TRUE(eventually([&] { return fs::exists(ready) || !p.running(); }, 30s));
  ASSERT_TRUE(p.running()) << p.err();
  {
    database_options o;
    o.table = table_;
    const database db(GetParam().uri, o);
    sql(db, "DELETE FROM " + table_ + " WHERE resource = $1", {std::string("stubborn")});
  }
  ASSERT_TRUE(eventually([&] { return p.err().find("lost while the command was running") != std::string::npos; }, 10s))
      << p.err();
  const auto told = steady::now();
  EXPECT_EQ(p.wait(30s), 5) << p.err();
  const auto took = steady::now() - told;
  EXPECT_GE(took, 1400ms) << "SIGKILL only after --kill-after";
  EXPECT_LT(took, scaled(4s));
  EXPECT_NE(::kill(std::stoi(read_text(pidfile)), 0), 0) << "the command was killed";
}

// The network to the lock database freezes: the renewal statement hangs with no error. The command
// is stopped when the lease runs out by sqllock's own clock — not when the statement returns,
// which would take until TCP gives up (a quarter of an hour).
TEST_P(CliRunFenceTest, AHungRenewalStopsTheCommandAtTheLocalDeadline) {
  if (GetParam().dialect == dialect_kind::sqlite) GTEST_SKIP() << "no network to SQLite";
  tcp_proxy proxy(GetParam().uri);
  const auto ready = dir_ / "ready", got = dir_ / "got";
  constexpr auto ttl = 2s;
  program p(run_args({"--lock", "frozen", "--ttl", "2s", "--kill-after", "1s"},
                     "trap 'touch \"" + got.string() + "\"; exit 0' TERM; touch '" + ready.string() + "'; " +
                         wait_for(dir_ / "never"),
                     proxy.uri()),
            dir_);
  ASSERT_TRUE(eventually([&] { return fs::exists(ready) || !p.running(); }, 30s));
  ASSERT_TRUE(p.running()) << p.err();
  std::this_thread::sleep_for(300ms);
  proxy.freeze();
  const auto frozen_at = steady::now();
  ASSERT_TRUE(eventually([&] { return fs::exists(got); }, scaled(ttl + 5s))) << "no SIGTERM: " << p.err();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - frozen_at);
  std::printf("[ info ] %s: SIGTERM %lld ms after the network froze (ttl %lld ms)\n", GetParam().name.c_str(),
              static_cast<long long>(took.count()), static_cast<long long>(std::chrono::milliseconds(ttl).count()));
  EXPECT_LE(took, scaled(ttl + 500ms)) << "at the local deadline: at most a lease after the last renewal";
  proxy.thaw();  // lets the release through
  EXPECT_EQ(p.wait(30s), 5) << p.err();
}

INSTANTIATE_TEST_SUITE_P(AllTargets, CliRunFenceTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
