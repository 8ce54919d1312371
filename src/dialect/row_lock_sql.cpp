#include "dialect/row_lock_sql.hpp"

#include <string_view>
#include <utility>

#include "common/sql_text.hpp"
#include "dialect/per_table_cache.hpp"

namespace sqllock::detail {
namespace {

row_lock_sql postgresql(const std::string& table) {
  const auto t = [&](std::string_view text) { return expand_table_template(text, dialect_kind::postgresql, table); };
  row_lock_sql s;
  s.kind = dialect_kind::postgresql;
  s.supported = true;
  s.ensure_before_begin = false;
  s.errors_abort_transaction = true;
  s.probe_in_caller_transaction = true;  // a READ COMMITTED read takes no lasting snapshot
  s.probe = t("SELECT 1 FROM {{table_rows}} WHERE resource = $1");
  // DO NOTHING on a committed row neither writes nor locks, so it never waits for a holder.
  s.ensure = t("INSERT INTO {{table_rows}} (resource) VALUES ($1) ON CONFLICT (resource) DO NOTHING");
  s.lock = t("SELECT 1 FROM {{table_rows}} WHERE resource = $1 FOR UPDATE");
  s.lock_nowait = t("SELECT 1 FROM {{table_rows}} WHERE resource = $1 FOR UPDATE NOWAIT");
  s.lock_wait = postgresql_lock_wait(true);
  s.savepoint = make_savepoint_sql("sqllock_row_lock");
  return s;
}

row_lock_sql mysql(const std::string& table) {
  const auto t = [&](std::string_view text) { return expand_table_template(text, dialect_kind::mysql, table); };
  row_lock_sql s;
  s.kind = dialect_kind::mysql;
  s.supported = true;
  s.ensure_before_begin = true;
  s.errors_abort_transaction = false;  // a lock wait timeout rolls back the statement only
  s.probe_in_caller_transaction = false;
  s.probe = t("SELECT 1 FROM {{table_rows}} WHERE resource = $1");
  // Neither INSERT IGNORE nor INSERT … ON DUPLICATE KEY UPDATE: on an existing key MariaDB 10.11
  // gives both a *shared* record lock, and two shared holders that both go on to FOR UPDATE
  // deadlock (seen with concurrent first locks of a name in callers' transactions). REPLACE
  // takes the exclusive record lock at once (with the key as the only unique index it updates the
  // row in place), so in a caller's transaction (no probe) it is what queues behind the insert or
  // the holder; it is a write, not a consistent read, so it fixes no REPEATABLE READ snapshot.
  s.ensure = t("REPLACE INTO {{table_rows}} (resource) VALUES ($1)");
  s.lock = t("SELECT 1 FROM {{table_rows}} WHERE resource = $1 FOR UPDATE");
  // MySQL 8.0.1+ and MariaDB 10.3+.
  s.lock_nowait = t("SELECT 1 FROM {{table_rows}} WHERE resource = $1 FOR UPDATE NOWAIT");
  s.timeout_ends_transaction = "SELECT @@GLOBAL.innodb_rollback_on_timeout";
  // innodb_lock_wait_timeout counts whole seconds, at least 1 on MySQL 8. MariaDB's per-statement
  // `WAIT n` is no finer (WAIT 0.5 acts as NOWAIT) and MySQL 8 lacks it, so the session variable
  // is used, read first and put back afterwards.
  s.lock_wait.unit_ms = 1000;
  s.lock_wait.min = 1;
  s.lock_wait.max = 100000000;  // seconds (about 3.2 years): MariaDB's limit (MySQL 8 allows 2^30)
  // 0 makes MariaDB 10.3+ fail a lock wait at once; MySQL 8 raises it to its minimum, 1 s.
  s.lock_wait.shortest = 0;
  s.lock_wait.unlimited = 100000000;  // never used: waits without a deadline keep the session's own
  s.lock_wait.transaction_local = false;
  s.lock_wait.get = "SELECT @@SESSION.innodb_lock_wait_timeout";
  s.lock_wait.set = "SET SESSION innodb_lock_wait_timeout = $1";
  s.lock_wait.restore = "SET SESSION innodb_lock_wait_timeout = CAST($1 AS UNSIGNED)";
  return s;
}

row_lock_sql sqlite() {
  row_lock_sql s;
  s.kind = dialect_kind::sqlite;
  s.supported = false;
  return s;
}

}  // namespace

std::shared_ptr<const row_lock_sql> row_lock_statements(dialect_kind kind, const std::string& table) {
  // Building the text costs little, but every with_row_lock call asks: keep one per table.
  return per_table_cache<row_lock_sql>::get(kind, table, [](dialect_kind k, const std::string& t) {
    switch (k) {
      case dialect_kind::postgresql: return postgresql(t);
      case dialect_kind::mysql: return mysql(t);
      case dialect_kind::sqlite: return sqlite();
    }
    throw not_supported("unknown dialect");
  });
}

bool is_no_transaction_error(dialect_kind kind, const backend_error& e) {
  return kind == dialect_kind::postgresql && e.sqlstate() == "25P01";
}

}  // namespace sqllock::detail
