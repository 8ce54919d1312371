// Parses the database URIs sqllock accepts (see include/sqllock/database.hpp) into their parts.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sqllock/dialect_kind.hpp"

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
  // The URI without the "soci+" prefix and without sqllock's own query parameters (below): a
  // libpq connection URI for PostgreSQL, which rejects parameters it does not know.
  std::string native_uri;
  // The URI with the password replaced by "***".
  std::string display;

  // sqllock's own query parameters, which never reach the client library:
  // ?prepare=on|off (PostgreSQL): off is the setting for a transaction-mode pooler such as
  // PgBouncer. It runs every statement unnamed (one Parse/Bind/Execute round trip, nothing kept
  // on the server session), and lock waiters poll instead of LISTENing, since such a pooler
  // delivers no notifications. on (the default) prepares each statement once per connection
  // under a name derived from its text (driver/pg_statements.hpp).
  bool prepare_statements = true;
  // ?galera=pinned (MySQL/MariaDB): every client of each named lock and row lock connects to the
  // same Galera node, so node-local GET_LOCK and FOR UPDATE still exclude. Without it those locks
  // are refused on a multi-node Galera cluster.
  bool galera_pinned = false;
  // ?statement_timeout=DURATION (server URIs): how long one statement may go unanswered before it
  // is cut off (database_options::statement_timeout, which this overrides). A whole number with
  // a unit, ms, s or m (no unit: seconds), from 1ms to 24h.
  std::optional<std::chrono::milliseconds> statement_timeout;

  // The value of query parameter `key`, if present.
  std::optional<std::string> param(std::string_view key) const;
};

// Throws sqllock::invalid_argument naming what is wrong and showing an accepted form.
connection_spec parse_uri(std::string_view uri);

}  // namespace sqllock::detail
