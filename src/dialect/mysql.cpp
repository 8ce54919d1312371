// MySQL 8 and MariaDB 10.6+ statements.
#include "common/sql_text.hpp"
#include "dialect/dialect.hpp"

namespace sqllock::detail {

dialect_sql make_mysql_sql(const std::string& table) {
  dialect_sql d;
  d.kind = dialect_kind::mysql;
  d.dir_name = "mysql";
  d.transactional_ddl = false;  // DDL commits implicitly; migrations are written idempotently
  d.begin = "START TRANSACTION";

  // One lock per database, whatever lock table is migrated (they share the history table).
  // GET_LOCK names are server-wide and at most 64 characters: the database name is hashed in.
  // A 600 s wait bounds how long a migration may stall behind another.
  d.migration_lock = "SELECT GET_LOCK(CONCAT('sqllock_migrate_', LEFT(SHA2(DATABASE(), 256), 40)), 600)";
  d.migration_unlock = "SELECT RELEASE_LOCK(CONCAT('sqllock_migrate_', LEFT(SHA2(DATABASE(), 256), 40)))";
  d.create_history =
      "CREATE TABLE IF NOT EXISTS sqllock_schema_migrations ("
      " lock_table VARCHAR(64) NOT NULL, version INT NOT NULL, name VARCHAR(255) NOT NULL,"
      " checksum CHAR(64) NOT NULL, applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
      " PRIMARY KEY (lock_table, version)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
  d.select_history =
      "SELECT version, name, checksum FROM sqllock_schema_migrations WHERE lock_table = $1 ORDER BY version";
  d.insert_history =
      "INSERT INTO sqllock_schema_migrations (lock_table, version, name, checksum) VALUES ($1, $2, $3, $4)";

  // MySQL has no WHERE on ON DUPLICATE KEY UPDATE, so each column is assigned conditionally.
  // Assignments run left to right and later ones see earlier results: every decision reads
  // owner_token and expires_at, so those two are assigned last (owner_token before expires_at).
  // UTC_TIMESTAMP(6) is fixed for the statement. VALUES(fence) is the token the BEFORE INSERT
  // trigger drew for this attempt. Success shows as affected rows (1 inserted, 2 updated, 0 held
  // elsewhere; the driver never sets CLIENT_FOUND_ROWS), then acquire_readback reads the row.
  constexpr std::string_view kAcquire = R"(
INSERT INTO {{table}} (resource, owner_token, holder_session, count, fence, holder_host,
    holder_pid, holder_thread, lease_ms, auto_renew, acquired_at, renewed_at, expires_at)
VALUES ($1, $2, $3, 1, 0, $4, $5, $6, $7, $8,
    UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL $7 * 1000 MICROSECOND)
ON DUPLICATE KEY UPDATE
    count = IF(owner_token = VALUES(owner_token) AND expires_at > VALUES(acquired_at), count + 1,
               IF(expires_at <= VALUES(acquired_at), 1, count)),
    fence = IF(owner_token = VALUES(owner_token) AND expires_at > VALUES(acquired_at), fence,
               IF(expires_at <= VALUES(acquired_at), VALUES(fence), fence)),
    acquired_at = IF(expires_at <= VALUES(acquired_at), VALUES(acquired_at), acquired_at),
    holder_session = IF(owner_token = VALUES(owner_token) OR expires_at <= VALUES(acquired_at),
                        VALUES(holder_session), holder_session),
    holder_host = IF(owner_token = VALUES(owner_token) OR expires_at <= VALUES(acquired_at),
                     VALUES(holder_host), holder_host),
    holder_pid = IF(owner_token = VALUES(owner_token) OR expires_at <= VALUES(acquired_at),
                    VALUES(holder_pid), holder_pid),
    holder_thread = IF(owner_token = VALUES(owner_token) OR expires_at <= VALUES(acquired_at),
                       VALUES(holder_thread), holder_thread),
    lease_ms = IF(owner_token = VALUES(owner_token) OR expires_at <= VALUES(acquired_at),
                  VALUES(lease_ms), lease_ms),
    auto_renew = IF(owner_token = VALUES(owner_token) OR expires_at <= VALUES(acquired_at),
                    VALUES(auto_renew), auto_renew),
    renewed_at = IF(owner_token = VALUES(owner_token) OR expires_at <= VALUES(acquired_at),
                    VALUES(renewed_at), renewed_at),
    owner_token = IF(expires_at <= VALUES(acquired_at), VALUES(owner_token), owner_token),
    expires_at = IF(owner_token = VALUES(owner_token), VALUES(expires_at), expires_at))";
  d.acquire = expand_table_template(kAcquire, d.kind, table);
  d.acquire_reads_back = true;
  d.acquire_readback = expand_table_template(
      "SELECT count, fence FROM {{table}} WHERE resource = $1 AND owner_token = $2", d.kind, table);
  d.lease_remaining = expand_table_template(
      "SELECT GREATEST(0, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) DIV 1000) "
      "FROM {{table}} WHERE resource = $1",
      d.kind, table);
  d.release_decrement = expand_table_template(
      "UPDATE {{table}} SET count = count - 1 "
      "WHERE resource = $1 AND owner_token = $2 AND fence = $3 AND count = $4",
      d.kind, table);
  d.release_delete = expand_table_template(
      "DELETE FROM {{table}} WHERE resource = $1 AND owner_token = $2 AND fence = $3", d.kind, table);
  // UTC_TIMESTAMP(6) is read when the statement starts, before any wait for a row lock; the row
  // may meanwhile have been taken over by another owner of the same session, with a later expiry.
  // GREATEST keeps a renewal from ever moving an expiry back (ending that lease early).
  d.renew = expand_table_template(
      "UPDATE {{table}} SET renewed_at = UTC_TIMESTAMP(6), "
      "expires_at = GREATEST(expires_at, UTC_TIMESTAMP(6) + INTERVAL lease_ms * 1000 MICROSECOND) "
      "WHERE holder_session = $1 AND auto_renew AND expires_at > UTC_TIMESTAMP(6)",
      d.kind, table);
  d.renew_reads_back = true;
  d.renew_readback = expand_table_template(
      "SELECT resource, owner_token, fence FROM {{table}} "
      "WHERE holder_session = $1 AND auto_renew AND expires_at > UTC_TIMESTAMP(6)",
      d.kind, table);
  return d;
}

}  // namespace sqllock::detail
