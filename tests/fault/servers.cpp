#include "fault/servers.hpp"

#include <fstream>
#include <stdexcept>

#include "fault/spawn.hpp"

namespace sqllock::fault {

std::map<std::string, std::string> read_env_file(const std::filesystem::path& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

private_server::private_server(const std::string& script, const std::filesystem::path& dir, dialect_kind dialect)
    : script_(script), dir_(dir), log_((dir.parent_path() / "servers.log").string()),
      suffix_(dialect == dialect_kind::postgresql ? "pg" : "my") {
  // test-servers.sh starts no server whose URI is already in the environment: naming the other
  // one (with a URI nothing connects to) starts only the one this run needs. The real variable
  // of our own server is removed so a caller's setting cannot redirect the faults elsewhere.
  const bool pg = dialect == dialect_kind::postgresql;
  const std::map<std::string, std::string> env = {
      {"SQLLOCK_TEST_PG_URI", pg ? "" : "postgresql://unused.invalid/none"},
      {"SQLLOCK_TEST_MYSQL_URI", pg ? "mysql://unused.invalid/none" : ""},
  };
  if (run({script_, "start", dir_.string()}, log_, env) != 0)
    throw std::runtime_error("test-servers.sh start failed; see " + log_);
  const auto vars = read_env_file(dir_ / "env");
  const auto get = [&](const std::string& key) {
    const auto it = vars.find(key);
    if (it == vars.end() || it->second.empty()) throw std::runtime_error("no " + key + " in " + (dir_ / "env").string());
    return it->second;
  };
  uri_ = get(pg ? "SQLLOCK_TEST_PG_URI" : "SQLLOCK_TEST_MYSQL_URI");
  port_ = std::stoi(get(pg ? "SQLLOCK_TEST_PG_PORT" : "SQLLOCK_TEST_MY_PORT"));
}

private_server::~private_server() {
  try {
    run({script_, "stop", dir_.string()}, log_);
  } catch (...) {
  }
}

bool private_server::restart(bool fast) {
  if (fast) return run({script_, "restart-" + suffix_, dir_.string()}, log_) == 0;
  const bool killed = run({script_, "kill-" + suffix_, dir_.string()}, log_) == 0;
  return run({script_, "start-" + suffix_, dir_.string()}, log_) == 0 && killed;
}

}  // namespace sqllock::fault
