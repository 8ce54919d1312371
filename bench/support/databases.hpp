// The databases the benchmarks run against, and raw SQL on them.
//
// Server URIs come from the environment like the tests' (SQLLOCK_TEST_PG_URI,
// SQLLOCK_TEST_MYSQL_URI, or the env file named by SQLLOCK_TEST_ENV_FILE; see
// tests/support/test_env.hpp). Each program run works in a fresh database per server, and in a
// fresh SQLite file, so earlier runs leave nothing behind that could skew a number.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/handle/database_impl.hpp"
#include "sqllock/database.hpp"

namespace sqllock::bench {

// One database a case runs on: "pg", "mariadb" or "sqlite".
struct bench_target {
  std::string name;
  dialect_kind dialect;
};

// The three targets, in report order.
const std::vector<bench_target>& all_targets();

// The URI of this run's fresh database on `dialect`'s server (created on first use), or nullopt
// when that server is not configured.
std::optional<std::string> target_uri(dialect_kind dialect);

// A handle on this run's database with lock table `table`, migrated. `query` ("key=value") is
// appended to the URI, e.g. "prepare=off". Throws std::runtime_error naming the missing variable
// when the server is not configured.
database open_target(dialect_kind dialect, const std::string& table = "distributed_lock", std::size_t pool_size = 8,
                     const std::string& query = "");

// Runs one statement ($1… placeholders) on a pooled connection of `db`; see tests/support.
detail::result run_sql(const database& db, const std::string& statement, std::vector<detail::value> params = {});

// Statements the server has executed so far, for counting round trips: on PostgreSQL the calls
// pg_stat_statements counts in this run's database (utility statements such as BEGIN and COMMIT
// included; the counting query itself excluded; the extension is created on first use and must
// be loaded at server start, as scripts/bench.sh does), on MariaDB the server's global
// `Questions` (every statement a client sent, text or prepared, the counting SHOW included).
// Throws std::runtime_error on SQLite, which has no such counter.
double server_statements(const database& db);

// Number of rows in db's lock table.
std::int64_t lock_rows(const database& db);

}  // namespace sqllock::bench
