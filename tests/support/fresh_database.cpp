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

std::string fresh_database_uri(const std::string& uri, dialect_kind dialect) {
  if (dialect == dialect_kind::sqlite) return sqlite_uri();
  const std::string name = unique_name("sqllock_fresh");
  {
    database admin(uri);
    sql(admin, "CREATE DATABASE " + name);
  }
  // Replace the path component (between the authority's '/' and any '?').
  const auto scheme_end = uri.find("://");
  const auto slash = uri.find('/', scheme_end + 3);
  const auto query = uri.find('?', scheme_end + 3);
  std::string out = uri.substr(0, slash == std::string::npos ? query : slash) + "/" + name;
  if (query != std::string::npos) out += uri.substr(query);
  return out;
}

}  // namespace sqllock::test
