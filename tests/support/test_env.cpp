#include "support/test_env.hpp"

#include "support/temp_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <vector>

namespace sqllock::test {
namespace {

// The fixture's env file.
const std::map<std::string, std::string>& env_file() {
  static const std::map<std::string, std::string> values = [] {
    const char* path = std::getenv("SQLLOCK_TEST_ENV_FILE");
    return read_env_file(path ? path : SQLLOCK_TEST_DEFAULT_ENV_FILE);
  }();
  return values;
}

std::optional<std::string> lookup(const char* key) {
  if (const char* v = std::getenv(key); v && *v) return std::string(v);
  const auto& file = env_file();
  if (auto it = file.find(key); it != file.end() && !it->second.empty()) return it->second;
  return std::nullopt;
}

}  // namespace

std::map<std::string, std::string> read_env_file(const std::filesystem::path& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("export ", 0) == 0) line.erase(0, 7);
    const auto eq = line.find('=');
    if (eq == std::string::npos || line.empty() || line[0] == '#') continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::optional<std::string> postgres_uri() { return lookup("SQLLOCK_TEST_PG_URI"); }
std::optional<std::string> mysql_uri() { return lookup("SQLLOCK_TEST_MYSQL_URI"); }
std::optional<std::string> postgres_runtime_uri() { return lookup("SQLLOCK_TEST_PG_RUNTIME_URI"); }
std::optional<std::string> mysql_runtime_uri() { return lookup("SQLLOCK_TEST_MYSQL_RUNTIME_URI"); }
std::optional<std::string> test_setting(const std::string& key) { return lookup(key.c_str()); }

std::string sqlite_uri() { return "sqlite://" + (make_temp_dir("sqllock-test") / "locks.db").string(); }

bool servers_required() {
  auto truthy = [](const char* v) { return v && *v && std::string_view(v) != "0" && std::string_view(v) != "false"; };
  return truthy(std::getenv("CI")) || truthy(std::getenv("SQLLOCK_TEST_REQUIRE_SERVERS"));
}

std::vector<target> all_targets() {
  const std::string pg = postgres_uri().value_or("");
  const std::string my = mysql_uri().value_or("");
  // A runtime URI without its owner's is ignored: nothing could migrate the tables it would use.
  const std::string pg_rt = pg.empty() ? "" : postgres_runtime_uri().value_or(pg);
  const std::string my_rt = my.empty() ? "" : mysql_runtime_uri().value_or(my);
  const auto soci = [](const std::string& uri) { return uri.empty() ? uri : "soci+" + uri; };
  const std::string lite = sqlite_uri();
  return {
      {"pqxx_postgresql", pg_rt, dialect_kind::postgresql, pg},
      {"mysql_mariadb", my_rt, dialect_kind::mysql, my},
      {"soci_sqlite", lite, dialect_kind::sqlite, lite},
      {"soci_postgresql", soci(pg_rt), dialect_kind::postgresql, soci(pg)},
      {"soci_mysql", soci(my_rt), dialect_kind::mysql, soci(my)},
  };
}

std::string with_query(const std::string& uri, const std::string& item) {
  if (uri.empty()) return uri;
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + item;
}

std::vector<target> pgbouncer_targets() {
  const std::string owner = with_query(lookup("SQLLOCK_TEST_PGBOUNCER_OWNER_URI").value_or(""), "prepare=off");
  const std::string runtime = owner.empty()
                                  ? ""
                                  : with_query(lookup("SQLLOCK_TEST_PGBOUNCER_URI").value_or(""), "prepare=off");
  const auto soci = [](const std::string& uri) { return uri.empty() ? uri : "soci+" + uri; };
  std::vector<target> out = {
      {"pgbouncer_pqxx", runtime, dialect_kind::postgresql, owner},
      {"pgbouncer_soci", soci(runtime), dialect_kind::postgresql, soci(owner)},
  };
  for (auto& t : out) t.transaction_pooler = true;
  return out;
}

std::vector<target> server_targets() {
  auto all = all_targets();
  std::erase_if(all, [](const target& t) { return t.dialect == dialect_kind::sqlite; });
  return all;
}

std::vector<target> as_owner(std::vector<target> targets) {
  for (auto& t : targets) t.uri = t.owner_uri;
  return targets;
}

}  // namespace sqllock::test
