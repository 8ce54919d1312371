#include "support/fresh_database.hpp"

#include <unistd.h>

#include <atomic>
#include <random>

#include "support/test_env.hpp"

namespace sqllock::test {

detail::result sql(const database& db, std::string_view statement, std::vector<detail::value> params) {
  auto conn = detail::database_access::impl(db).borrow();
  if (params.empty()) return conn->exec_direct(statement);
  return conn->exec(statement, params);
}

std::string unique_name(std::string_view prefix) {
  static std::atomic<int> counter{0};
  static const unsigned salt = std::random_device{}();
  return std::string(prefix) + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
         std::to_string(salt % 100000);
}

namespace {

// Creates an empty database on the server of `uri` and returns its name.
std::string create_database(const std::string& uri) {
  const std::string name = unique_name("sqllock_fresh");
  database admin(uri);
  sql(admin, "CREATE DATABASE " + name);
  return name;
}

// `uri` with its path component (between the authority's '/' and any '?') replaced by `name`.
std::string with_database(const std::string& uri, const std::string& name) {
  const auto scheme_end = uri.find("://");
  const auto slash = uri.find('/', scheme_end + 3);
  const auto query = uri.find('?', scheme_end + 3);
  std::string out = uri.substr(0, slash == std::string::npos ? query : slash) + "/" + name;
  if (query != std::string::npos) out += uri.substr(query);
  return out;
}

}  // namespace

std::string fresh_database_uri(const std::string& uri, dialect_kind dialect) {
  if (dialect == dialect_kind::sqlite) return sqlite_uri();
  return with_database(uri, create_database(uri));
}

target fresh_database(const target& t) {
  target out = t;
  if (t.dialect == dialect_kind::sqlite) {
    out.uri = out.owner_uri = sqlite_uri();
    return out;
  }
  const std::string name = create_database(t.owner_uri);
  out.uri = with_database(t.uri, name);
  out.owner_uri = with_database(t.owner_uri, name);
  return out;
}

}  // namespace sqllock::test
