// SQLite 3.35+ statements (upsert with RETURNING).
#include "common/sql_text.hpp"
#include "dialect/dialect.hpp"

namespace sqllock::detail {

dialect_sql make_sqlite_sql(const std::string& table) {
  dialect_sql d;
  d.kind = dialect_kind::sqlite;
  d.dir_name = "sqlite3";
  d.transactional_ddl = true;

  // SQLite has one writer at a time: BEGIN IMMEDIATE takes the write lock up front (waiting up to
  // the busy timeout), so concurrent migrators queue behind one transaction.
  d.migration_lock_is_transaction = true;
  d.migration_lock = "BEGIN IMMEDIATE";
  d.migration_unlock = "COMMIT";
  d.create_history =
      "CREATE TABLE IF NOT EXISTS sqllock_schema_migrations ("
      " lock_table TEXT NOT NULL, version INTEGER NOT NULL, name TEXT NOT NULL,"
      " checksum TEXT NOT NULL,"
      " applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),"
      " PRIMARY KEY (lock_table, version))";
  d.select_history =
      "SELECT version, name, checksum FROM sqllock_schema_migrations WHERE lock_table = $1 ORDER BY version";
  d.insert_history =
      "INSERT INTO sqllock_schema_migrations (lock_table, version, name, checksum) VALUES ($1, $2, $3, $4)";

  // In an upsert's DO UPDATE, bare column names are the existing row and excluded.* the attempted
  // one; all SET expressions see the old row. 'now' is fixed for the statement (millisecond
  // precision). The fence comes from the high-water table; its triggers store the new value.
  constexpr std::string_view kAcquire = R"(
INSERT INTO {{table}} (resource, owner_token, holder_session, count, fence, holder_host,
    holder_pid, holder_thread, lease_ms, auto_renew, acquired_at, renewed_at, expires_at)
VALUES ($1, $2, $3, 1, (SELECT value + 1 FROM {{table_fence}} WHERE id = 1), $4, $5, $6, $7, $8,
    strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now'),
    strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || ($7 / 1000.0) || ' seconds'))
ON CONFLICT (resource) DO UPDATE SET
    count = CASE WHEN owner_token = excluded.owner_token AND expires_at > excluded.acquired_at
                 THEN count + 1 ELSE 1 END,
    fence = CASE WHEN owner_token = excluded.owner_token AND expires_at > excluded.acquired_at
                 THEN fence ELSE excluded.fence END,
    acquired_at = CASE WHEN owner_token = excluded.owner_token AND expires_at > excluded.acquired_at
                 THEN acquired_at ELSE excluded.acquired_at END,
    owner_token = excluded.owner_token,
    holder_session = excluded.holder_session,
    holder_host = excluded.holder_host,
    holder_pid = excluded.holder_pid,
    holder_thread = excluded.holder_thread,
    lease_ms = excluded.lease_ms,
    auto_renew = excluded.auto_renew,
    renewed_at = excluded.renewed_at,
    expires_at = excluded.expires_at
WHERE owner_token = excluded.owner_token OR expires_at <= excluded.acquired_at
RETURNING count, fence)";
  d.acquire = expand_table_template(kAcquire, d.kind, table);
  d.lease_remaining = expand_table_template(
      "SELECT MAX(0, CAST(ROUND((julianday(expires_at) - julianday('now')) * 86400000) AS INTEGER)) "
      "FROM {{table}} WHERE resource = $1",
      d.kind, table);
  d.release_decrement = expand_table_template(
      "UPDATE {{table}} SET count = count - 1 "
      "WHERE resource = $1 AND owner_token = $2 AND fence = $3 AND count = $4",
      d.kind, table);
  d.release_delete = expand_table_template(
      "DELETE FROM {{table}} WHERE resource = $1 AND owner_token = $2 AND fence = $3 "
      "RETURNING resource",
      d.kind, table);
  d.renew = expand_table_template(
      "UPDATE {{table}} SET renewed_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), "
      // max(): like the server dialects, a renewal never moves an expiry back.
      "expires_at = max(expires_at, strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || (lease_ms / 1000.0) || ' seconds')) "
      "WHERE holder_session = $1 AND auto_renew <> 0 AND expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now') "
      "RETURNING resource, owner_token, fence",
      d.kind, table);
  return d;
}

}  // namespace sqllock::detail
