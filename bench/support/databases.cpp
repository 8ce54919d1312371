#include "support/databases.hpp"

#include <map>
#include <mutex>
#include <stdexcept>

#include "sqllock/migrate.hpp"
#include "support/fresh_database.hpp"
#include "support/test_env.hpp"

namespace sqllock::bench {

const std::vector<bench_target>& all_targets() {
  static const std::vector<bench_target> targets = {
      {"pg", dialect_kind::postgresql}, {"mariadb", dialect_kind::mysql}, {"sqlite", dialect_kind::sqlite}};
  return targets;
}

std::optional<std::string> target_uri(dialect_kind dialect) {
  static std::mutex mu;
  static std::map<dialect_kind, std::optional<std::string>> uris;
  std::lock_guard lock(mu);
  if (auto it = uris.find(dialect); it != uris.end()) return it->second;
  std::optional<std::string> server;
  switch (dialect) {
    case dialect_kind::postgresql: server = test::postgres_uri(); break;
    case dialect_kind::mysql: server = test::mysql_uri(); break;
    case dialect_kind::sqlite: server = test::sqlite_uri(); break;
  }
  if (server && !server->empty())
    server = test::fresh_database_uri(*server, dialect);
  else
    server.reset();
  return uris[dialect] = server;
}

database open_target(dialect_kind dialect, const std::string& table, std::size_t pool_size, const std::string& query) {
  const auto uri = target_uri(dialect);
  if (!uri)
    throw std::runtime_error(std::string("no ") + std::string(to_string(dialect)) +
                             " server configured (SQLLOCK_TEST_PG_URI / SQLLOCK_TEST_MYSQL_URI)");
  database_options options;
  options.table = table;
  options.pool_size = pool_size;
  database db(query.empty() ? *uri : test::with_query(*uri, query), options);
  migrate(db);
  return db;
}

detail::result run_sql(const database& db, const std::string& statement, std::vector<detail::value> params) {
  return test::sql(db, statement, std::move(params));
}

double server_statements(const database& db) {
  switch (db.dialect()) {
    case dialect_kind::postgresql: {
      static std::once_flag created;
      std::call_once(created, [&] { run_sql(db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); });
      const auto r = run_sql(
          db,
          "SELECT COALESCE(SUM(calls), 0) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM "
          "pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'");
      return std::stod(r.rows.at(0).at(0).value_or("0"));
    }
    case dialect_kind::mysql: {
      const auto r = run_sql(db, "SHOW GLOBAL STATUS LIKE 'Questions'");
      return std::stod(r.rows.at(0).at(1).value_or("0"));
    }
    case dialect_kind::sqlite: break;
  }
  throw std::runtime_error("SQLite has no server-side statement counter");
}

std::int64_t lock_rows(const database& db) {
  const char q = db.dialect() == dialect_kind::mysql ? '`' : '"';
  const auto r = run_sql(db, std::string("SELECT COUNT(*) FROM ") + q + db.table() + q);
  return std::stoll(r.rows.at(0).at(0).value_or("0"));
}

}  // namespace sqllock::bench
