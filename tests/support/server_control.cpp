#include "support/server_control.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <stdexcept>

namespace sqllock::test {

script_runner captured_runner(std::chrono::seconds timeout) {
  return [timeout](const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, bool) {
    const auto dir = make_temp_dir("sqllock-server-control");
    auto r = run_program(argv, dir, env, timeout);
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    return r;
  };
}

server_control::server_control(std::string script, std::filesystem::path state_dir, dialect_kind dialect,
                               script_runner runner)
    : script_(std::move(script)), state_dir_(std::move(state_dir)), dialect_(dialect),
      suffix_(dialect == dialect_kind::postgresql ? "pg" : "my"), runner_(std::move(runner)) {}

std::optional<server_control> server_control::for_tests(const target& t) {
  if (t.dialect == dialect_kind::sqlite) return std::nullopt;
  const auto script = test_setting("SQLLOCK_TEST_SERVERS_SCRIPT");
  const auto dir = test_setting("SQLLOCK_TEST_STATE_DIR");
  const bool ours =
      test_setting(t.dialect == dialect_kind::postgresql ? "SQLLOCK_TEST_PG_DATA" : "SQLLOCK_TEST_MY_DATA").has_value();
  if (!script || !dir || !ours) return std::nullopt;
  return server_control(*script, *dir, t.dialect);
}

std::vector<std::string> server_control::command(const std::string& action) const {
  std::string verb = action;
  verb += '-';
  verb += suffix_;
  return {script_, verb, state_dir_.string()};
}

run_result server_control::run(const std::string& action) const { return runner_(command(action), {}, false); }

void server_control::must(const std::vector<std::string>& actions) const {
  for (const auto& action : actions) {
    const auto r = run(action);
    ASSERT_EQ(r.code, 0) << action << "-" << suffix_ << ": " << r.out << r.err;
  }
}

run_result server_control::start_only() const {
  const bool pg = dialect_ == dialect_kind::postgresql;
  // A PgBouncer named in the environment would be copied to state_dir/env instead of the one in
  // front of this server (the fault harness's --via pgbouncer).
  return script("start", {},
                {{"SQLLOCK_TEST_PG_URI", pg ? "" : "postgresql://unused.invalid/none"},
                 {"SQLLOCK_TEST_MYSQL_URI", pg ? "mysql://unused.invalid/none" : ""},
                 {"SQLLOCK_TEST_PGBOUNCER_URI", ""},
                 {"SQLLOCK_TEST_PGBOUNCER_OWNER_URI", ""}});
}

std::string server_control::uri() const {
  return setting(dialect_ == dialect_kind::postgresql ? "SQLLOCK_TEST_PG_URI" : "SQLLOCK_TEST_MYSQL_URI");
}

run_result server_control::script(const std::string& command, const std::vector<std::string>& args,
                                  const std::map<std::string, std::string>& env, bool want_stdout) const {
  std::vector<std::string> argv = {script_, command, state_dir_.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return runner_(argv, env, want_stdout);
}

run_result server_control::stop_all() const { return script("stop"); }

std::string server_control::setting(const std::string& key) const {
  const auto file = state_dir_ / "env";
  const auto vars = read_env_file(file);
  const auto it = vars.find(key);
  if (it == vars.end() || it->second.empty())
    throw std::runtime_error("no " + key + " in " + file.string() + ": did " + script_ + " start there?");
  return it->second;
}

run_result server_control::start_cluster(const std::string& cluster) const {
  std::string verb = "start-";
  verb += cluster;
  return script(verb);
}

std::optional<std::string> server_control::pgaf_kill_primary() const {
  auto r = script("pgaf-kill-primary", {}, {}, true);
  if (r.code != 0) return std::nullopt;
  std::string& node = r.out;
  while (!node.empty() && std::isspace(static_cast<unsigned char>(node.back()))) node.pop_back();
  return node.substr(node.find_last_of('\n') + 1);  // the last line: the killed node's name
}

bool server_control::pgaf_rejoin(const std::string& node) const { return script("pgaf-rejoin", {node}).code == 0; }

bool server_control::galera_kill(int node) const { return script("galera-kill", {std::to_string(node)}).code == 0; }

bool server_control::galera_start(int node) const { return script("galera-start", {std::to_string(node)}).code == 0; }

}  // namespace sqllock::test
