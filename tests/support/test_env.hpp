// Where the tests find their databases.
//
// Server URIs come from the environment (SQLLOCK_TEST_PG_URI, SQLLOCK_TEST_MYSQL_URI) or, when
// unset, from the env file that the ctest fixture `servers` writes after starting private servers
// (SQLLOCK_TEST_ENV_FILE, default <build>/test-servers/env). A test that needs a server that is
// not configured fails when servers are required (CI=true or SQLLOCK_TEST_REQUIRE_SERVERS=1) and
// is skipped otherwise.
//
// Least privilege: those URIs connect as the schema owner. SQLLOCK_TEST_PG_RUNTIME_URI and
// SQLLOCK_TEST_MYSQL_RUNTIME_URI (set by scripts/test-servers.sh for its servers) connect as a
// role with only SELECT/INSERT/UPDATE/DELETE on tables and USAGE on sequences. target::uri is the
// runtime role's, so every lock test runs with least privilege; the owner's URI is for migrate(),
// DDL, CREATE DATABASE and other owner work (target::owner_uri, as_owner()). SQLite has no roles:
// both are the same file.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::test {

// The KEY=VALUE lines of an env file such as scripts/test-servers.sh writes (an optional leading
// "export " is ignored, and so are comments); empty when the file cannot be read.
std::map<std::string, std::string> read_env_file(const std::filesystem::path& path);

// libpq-style URI of the PostgreSQL test database, e.g. postgresql://postgres@127.0.0.1:5/db.
std::optional<std::string> postgres_uri();
// URI of the MariaDB/MySQL test database, e.g. mysql://sqllock:sqllock@127.0.0.1:5/db.
std::optional<std::string> mysql_uri();
// The same databases as the least-privilege runtime role; nullopt when none is configured.
std::optional<std::string> postgres_runtime_uri();
std::optional<std::string> mysql_runtime_uri();
// A fresh SQLite database file in a new temporary directory, as a sqlite:/// URI.
std::string sqlite_uri();
// True when a missing server must fail rather than skip the test.
bool servers_required();
// Any other setting of the environment or the fixture's env file, e.g. SQLLOCK_TEST_SERVERS_SCRIPT
// and SQLLOCK_TEST_STATE_DIR for fault tests (scripts/test-servers.sh lists them); nullopt when
// neither has it.
std::optional<std::string> test_setting(const std::string& key);

// One driver × dialect pair the suites run against.
struct target {
  std::string name;  // e.g. "pqxx_postgresql"; usable as a gtest parameter name
  // What lock operations connect with: the runtime role when the server has one configured, else
  // the owner. Empty when the server is not configured.
  std::string uri;
  dialect_kind dialect;
  // The schema owner (may migrate and run DDL); equal to uri when there is no runtime role.
  std::string owner_uri;
  // True when uri is a least-privilege role distinct from owner_uri.
  bool least_privilege() const { return uri != owner_uri; }
  // The URIs reach the server through a transaction-mode pooler (PgBouncer): a session-level
  // lock is refused there, and no notification arrives.
  bool transaction_pooler = false;
};

// gtest prints a target by its name.
inline void PrintTo(const target& t, std::ostream* os) { *os << t.name; }

// Every pair: pqxx_postgresql, mysql_mariadb, soci_sqlite, soci_postgresql, soci_mysql.
std::vector<target> all_targets();

// The pairs with a database server (all but SQLite): for suites about sessions, server-side
// kills and restarts.
std::vector<target> server_targets();

// PostgreSQL through the PgBouncer (pool_mode = transaction, two server connections) that
// scripts/test-servers.sh starts in front of the test server, with ?prepare=off, on both
// PostgreSQL drivers: pgbouncer_pqxx and pgbouncer_soci. Empty URIs when no PgBouncer runs.
std::vector<target> pgbouncer_targets();

// `uri` with the query item `item` ("key=value") appended; empty stays empty.
std::string with_query(const std::string& uri, const std::string& item);

// `targets` with uri set to owner_uri: for suites whose subject needs the owner's rights
// (migrations, drivers' DDL, new databases).
std::vector<target> as_owner(std::vector<target> targets);

}  // namespace sqllock::test

// Use at the top of a test that needs `uri` (a std::string, empty when not configured).
#define SQLLOCK_REQUIRE_SERVER(uri)                                              \
  do {                                                                           \
    if ((uri).empty()) {                                                         \
      if (::sqllock::test::servers_required())                                   \
        FAIL() << "test server not configured (see tests/support/test_env.hpp)"; \
      else                                                                       \
        GTEST_SKIP() << "test server not configured; set SQLLOCK_TEST_*_URI";    \
    }                                                                            \
  } while (0)
