// README's guarded write from a shell command (## sqllock run): the command that `sqllock run`
// starts writes with the database's own client — psql with --single-transaction, or mariadb with
// START TRANSACTION … COMMIT — and calls the SQL guard (<table>_guard(name, fence), migration 6)
// first, in the same transaction. Holder A's `sqllock run` is paused (SIGSTOP) past its lease
// while its command waits; holder B takes the lock and writes; then A resumes and its command
// writes late. Guarded, A's UPDATE is refused and not committed (B's value stays). The control,
// the same command without the guard, commits A's stale write over B's. Real processes (SQLLOCK_CLI,
// psql, mariadb) against each server target; SQLite's one-statement form is in guard_sql_test.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/uri.hpp"
#include "sqllock/database.hpp"
#include "support/fresh_database.hpp"
#include "support/program.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// A shell snippet that waits (up to 60 s) until `file` exists.
std::string wait_for(const fs::path& file) {
  return "i=0; while [ ! -e '" + file.string() + "' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done";
}

// The path of program `name`: in `dir` when given and there, else on PATH; "" when not found.
std::string find_program(const std::string& name, const std::string& dir = "") {
  if (!dir.empty() && ::access((fs::path(dir) / name).c_str(), X_OK) == 0) return (fs::path(dir) / name).string();
  const char* path = std::getenv("PATH");
  std::istringstream in(path ? path : "");
  for (std::string d; std::getline(in, d, ':');)
    if (!d.empty() && ::access((fs::path(d) / name).c_str(), X_OK) == 0) return (fs::path(d) / name).string();
  return "";
}

class CliRunGuardTest : public ::testing::TestWithParam<target> {
 protected:
  void SetUp() override {
    SQLLOCK_REQUIRE_SERVER(GetParam().uri);
    const bool pg = GetParam().dialect == dialect_kind::postgresql;
    client_ = pg                                ? find_program("psql", test_setting("SQLLOCK_TEST_PG_BIN").value_or(""))
              : find_program("mariadb").empty() ? find_program("mysql")
                                                : find_program("mariadb");
    if (client_.empty()) {
      if (servers_required()) FAIL() << (pg ? "psql" : "mariadb") << " not found on PATH";
      GTEST_SKIP() << (pg ? "psql" : "mariadb") << " not found on PATH";
    }
    dir_ = make_temp_dir("sqllock-guard");
    table_ = unique_name("gd");
    data_ = unique_name("report");
    const auto r = run_program({SQLLOCK_CLI, "migrate", "--db", GetParam().owner_uri, "--table", table_}, dir_);
    ASSERT_EQ(r.code, 0) << r.err;
    const database owner(GetParam().owner_uri);
    sql(owner, "CREATE TABLE " + data_ + " (id INTEGER PRIMARY KEY, body VARCHAR(16) NOT NULL)");
    sql(owner, "INSERT INTO " + data_ + " (id, body) VALUES (1, 'none')");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // `sqllock run --db … --table … OPTIONS… -- sh -c SCRIPT`
  std::vector<std::string> run_args(std::vector<std::string> options, const std::string& script) const {
    std::vector<std::string> a{SQLLOCK_CLI, "run", "--db", GetParam().uri, "--table", table_};
    a.insert(a.end(), options.begin(), options.end());
    a.insert(a.end(), {"--", "sh", "-c", script});
    return a;
  }

  // The script README shows: writes its first argument into the data table with the database's
  // client, in one transaction that calls the SQL guard first (or, unguarded, does not).
  fs::path write_script(bool guarded) const {
    const auto script = dir_ / (guarded ? "guarded.sh" : "unguarded.sh");
    std::ofstream out(script);
    const auto spec = detail::parse_uri(GetParam().uri);
    if (GetParam().dialect == dialect_kind::postgresql) {
      out << "'" << client_ << "' '" << spec.native_uri
          << "' -X -q -v ON_ERROR_STOP=1 --single-transaction \\\n"
             "  -v name=\"$SQLLOCK_NAME\" -v fence=\"$SQLLOCK_FENCE\" -v body=\"$1\" -f - <<'SQL'\n";
      if (guarded) out << "SELECT " << table_ << "_guard(:'name', :'fence');\n";
      out << "UPDATE " << data_ << " SET body = :'body' WHERE id = 1;\nSQL\n";
    } else {
      const auto cnf = dir_ / "client.cnf";
      std::ofstream(cnf) << "[client]\nhost=" << spec.host << "\nport=" << spec.port.value_or(3306)
                         << "\nuser=" << spec.user << "\npassword=" << spec.password << "\n";
      out << "'" << client_ << "' --defaults-file='" << cnf.string() << "' '" << spec.database << "' <<SQL\n"
          << "START TRANSACTION;\n";
      if (guarded) out << "SELECT " << table_ << "_guard('$SQLLOCK_NAME', $SQLLOCK_FENCE);\n";
      out << "UPDATE " << data_ << " SET body = '$1' WHERE id = 1;\nCOMMIT;\nSQL\n";
    }
    return script;
  }

  std::string body() const {
    const database db(GetParam().uri);
    return sql(db, "SELECT body FROM " + data_ + " WHERE id = $1", {std::int64_t{1}}).rows.at(0).at(0).value();
  }

  struct late_write {
    int client_status = -1;  // the exit status of A's write
    std::string client_output;
    int run_status = -1;  // A's `sqllock run`
  };
  // A holds the lock and its command waits; A's sqllock run is paused past the lease; B takes
  // the lock and writes "B" (the same script); A resumes and its command writes "A".
  late_write pause_past_the_lease(bool guarded) {
    const auto script = write_script(guarded);
    const auto ready = dir_ / "ready", go = dir_ / "go", a_out = dir_ / "a.out", a_code = dir_ / "a.code";
    program a(run_args({"--lock", "report", "--ttl", "1s", "--kill-after", "60s"},
                       "trap '' TERM; touch '" + ready.string() + "'; " + wait_for(go) + "; sh '" + script.string() +
                           "' A > '" + a_out.string() + "' 2>&1; echo $? > '" + a_code.string() + "'"),
              dir_);
    late_write out;
    EXPECT_TRUE(eventually([&] { return fs::exists(ready) || !a.running(); }, 30s));
    if (!a.running()) {
      ADD_FAILURE() << "A's command did not start: " << a.err();
      return out;
    }
    ::kill(a.pid(), SIGSTOP);  // A's host pauses: no renewal from here on
    std::this_thread::sleep_for(scaled(1500ms));
    const auto b = run_program(run_args({"--lock", "report", "--wait", "20s"}, "sh '" + script.string() + "' B"), dir_);
    EXPECT_EQ(b.code, 0) << "B got the lock and wrote: " << b.out << b.err;
    EXPECT_EQ(body(), "B");
    ::kill(a.pid(), SIGCONT);  // A resumes, and its command writes late
    std::ofstream(go).put('\n');
    EXPECT_TRUE(eventually([&] { return fs::exists(a_code) && !read_text(a_code).empty(); }, scaled(30s)));
    out.client_status = std::atoi(read_text(a_code).c_str());
    out.client_output = read_text(a_out);
    out.run_status = a.wait(scaled(30s));
    return out;
  }

  std::string client_;
  fs::path dir_;
  std::string table_;
  std::string data_;
};

TEST_P(CliRunGuardTest, AGuardedWriteFromAPausedCommandIsRefusedAndNotCommitted) {
  const auto a = pause_past_the_lease(true);
  EXPECT_NE(a.client_status, 0) << "the client failed on the guard: " << a.client_output;
  EXPECT_NE(a.client_output.find("sqllock: lock no longer held, roll the transaction back"), std::string::npos)
      << a.client_output;
  EXPECT_EQ(body(), "B") << "A's late write was not committed";
  EXPECT_EQ(a.run_status, 5) << "A's sqllock run reports the lost lock";
}

// The control: the same command without the guard commits A's stale write over B's.
TEST_P(CliRunGuardTest, WithoutTheGuardThePausedCommandsStaleWriteCommits) {
  const auto a = pause_past_the_lease(false);
  EXPECT_EQ(a.client_status, 0) << a.client_output;
  EXPECT_EQ(body(), "A") << "the stale write overwrote the later holder's";
  EXPECT_EQ(a.run_status, 5);
}

TEST_P(CliRunGuardTest, AGuardedWriteWhileHeldCommits) {
  const auto script = write_script(true);
  const auto r = run_program(run_args({"--lock", "report"}, "sh '" + script.string() + "' held"), dir_);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(body(), "held");
}

INSTANTIATE_TEST_SUITE_P(Servers, CliRunGuardTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
