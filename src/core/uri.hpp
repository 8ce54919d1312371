// Parses the database URIs sqllock accepts (see include/sqllock/database.hpp) into their parts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::detail {

enum class driver_kind { pqxx, mysql, soci };

struct connection_spec {
  driver_kind driver = driver_kind::soci;
  dialect_kind dialect = dialect_kind::sqlite;
  // Server URIs: percent-decoded parts. host is empty for a Unix socket given by ?socket=.
  std::string user;
  std::string password;
  std::string host;
  std::optional<int> port;
  std::string database;
  // Query parameters in order, percent-decoded (e.g. socket=/run/mysqld/mysqld.sock).
  std::vector<std::pair<std::string, std::string>> params;
  // SQLite: the database file path as given (absolute or relative to the working directory).
  std::string path;
  // The URI without the "soci+" prefix (a libpq connection URI for PostgreSQL).
  std::string native_uri;
  // The URI with the password replaced by "***".
  std::string display;

  // The value of query parameter `key`, if present.
  std::optional<std::string> param(std::string_view key) const;
};

// Throws sqllock::invalid_argument naming what is wrong and showing an accepted form.
connection_spec parse_uri(std::string_view uri);

}  // namespace sqllock::detail
