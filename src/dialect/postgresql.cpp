// PostgreSQL 12+ statements.
#include <string_view>

#include "common/sql_text.hpp"
#include "dialect/dialect.hpp"
#include "dialect/postgresql_keys.hpp"
#include "dialect/postgresql_renew.hpp"

namespace sqllock::detail {
namespace {

// The first 8 bytes of sha256('sqllock.migrate') as a signed bigint. CAST, not '::', so the text
// survives SOCI's ':name' placeholder parsing.
constexpr std::string_view kMigrationKey =
    "CAST(CAST('x' || left(encode(sha256(convert_to('sqllock.migrate', 'UTF8')), 'hex'), 16) AS bit(64)) AS bigint)";

}  // namespace

dialect_sql make_postgresql_sql(const std::string& table) {
  dialect_sql d;
  d.kind = dialect_kind::postgresql;
  d.dir_name = "postgresql";
  d.transactional_ddl = true;

  // A transaction-level advisory lock, one per database (advisory locks are scoped to the current
  // database), whatever lock table is migrated: migrations of different lock tables share the
  // history table, and two concurrent CREATE TABLE IF NOT EXISTS of it can fail on PostgreSQL's
  // catalog (duplicate pg_type entry). The key is the first 8 bytes of sha256('sqllock.migrate').
  // One transaction holds the lock and applies every migration (DDL is transactional here), so
  // nothing outlives it: a session-level lock taken and released by separate statements would
  // strand on a server connection of a transaction-mode pooler (PgBouncer) and block every later
  // migration of the database.
  d.migration_lock_is_transaction = true;
  d.migration_lock = "BEGIN; SELECT pg_advisory_xact_lock(" + std::string(kMigrationKey) + ")";
  d.migration_unlock = "COMMIT";
  d.create_history =
      "CREATE TABLE IF NOT EXISTS sqllock_schema_migrations ("
      " lock_table text NOT NULL, version integer NOT NULL, name text NOT NULL,"
      " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),"
      " PRIMARY KEY (lock_table, version))";
  d.select_history =
      "SELECT version, name, checksum FROM sqllock_schema_migrations WHERE lock_table = $1 ORDER BY version";
  d.insert_history =
      "INSERT INTO sqllock_schema_migrations (lock_table, version, name, checksum) VALUES ($1, CAST($2 AS integer), $3, $4)";

  // Take-over and re-entry are decided against EXCLUDED.acquired_at, so the whole statement
  // uses one reading of clock_timestamp() (now() would be the transaction's start time).
  //
  // Fences must rise in the order grants commit, but nextval() is drawn when the statement
  // starts, and an acquire can then wait (for a competing insert or a row lock) while another
  // acquire draws a later value and commits first. So every acquire of a name first takes a
  // transaction-scoped advisory lock on a 64-bit hash of the name (held until the statement
  // commits; OFFSET 0 keeps the planner from folding it away), and draws the fence and reads the
  // clock only after it: draw-to-commit of two grants of one name never interleaves. A hash
  // collision only makes two names queue briefly; a caller's own advisory lock on the same key
  // (1 in 2^64 by chance) would make acquires of that name wait while it is held.
  constexpr std::string_view kAcquire = R"(
INSERT INTO {{table}} AS l (resource, owner_token, holder_session, count, fence, holder_host,
    holder_pid, holder_thread, lease_ms, auto_renew, acquired_at, renewed_at, expires_at)
SELECT CAST($1 AS text), CAST($2 AS text), CAST($3 AS text), 1, nextval('{{table_fence_seq}}'),
    CAST($4 AS text), CAST($5 AS bigint), CAST($6 AS text), CAST($7 AS bigint), CAST($8 AS integer) <> 0,
    t.now, t.now, t.now + CAST($7 AS bigint) * interval '1 millisecond'
FROM (SELECT clock_timestamp() AS now
      FROM (SELECT pg_advisory_xact_lock(ACQUIRE_KEY) OFFSET 0) AS g
     ) AS t
ON CONFLICT (resource) DO UPDATE SET
    count = CASE WHEN l.owner_token = EXCLUDED.owner_token AND l.expires_at > EXCLUDED.acquired_at
                 THEN l.count + 1 ELSE 1 END,
    fence = CASE WHEN l.owner_token = EXCLUDED.owner_token AND l.expires_at > EXCLUDED.acquired_at
                 THEN l.fence ELSE EXCLUDED.fence END,
    acquired_at = CASE WHEN l.owner_token = EXCLUDED.owner_token AND l.expires_at > EXCLUDED.acquired_at
                 THEN l.acquired_at ELSE EXCLUDED.acquired_at END,
    owner_token = EXCLUDED.owner_token,
    holder_session = EXCLUDED.holder_session,
    holder_host = EXCLUDED.holder_host,
    holder_pid = EXCLUDED.holder_pid,
    holder_thread = EXCLUDED.holder_thread,
    lease_ms = EXCLUDED.lease_ms,
    auto_renew = EXCLUDED.auto_renew,
    renewed_at = EXCLUDED.renewed_at,
    expires_at = EXCLUDED.expires_at
WHERE l.owner_token = EXCLUDED.owner_token OR l.expires_at <= EXCLUDED.acquired_at
RETURNING count, fence)";
  std::string acquire(kAcquire);
  acquire.replace(acquire.find("ACQUIRE_KEY"), std::string_view("ACQUIRE_KEY").size(),
                  pg_acquire_key("CAST($1 AS text)"));
  d.acquire = expand_table_template(acquire, d.kind, table);
  d.lease_remaining = expand_table_template(
      "SELECT GREATEST(0, CAST(EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000 AS bigint)) "
      "FROM {{table}} WHERE resource = $1",
      d.kind, table);
  d.release_decrement = expand_table_template(
      "UPDATE {{table}} SET count = count - 1 "
      "WHERE resource = $1 AND owner_token = $2 AND fence = CAST($3 AS bigint) AND count = CAST($4 AS bigint)",
      d.kind, table);
  // The NOTIFY, sent when some process waits for the name, is delivered when the DELETE commits,
  // waking waiters on other connections.
  d.release_delete = expand_table_template(
      "WITH gone AS (DELETE FROM {{table}} "
      "WHERE resource = $1 AND owner_token = $2 AND fence = CAST($3 AS bigint) RETURNING resource) "
      "SELECT " +
          pg_notify_waiters("CAST($4 AS text)", "resource") + " FROM gone",
      d.kind, table);
  // Rows locked in key order, then renewed (dialect/postgresql_renew.hpp).
  d.renew = expand_table_template(
      std::string(kPgRenewClock) + std::string(kPgRenewLocks) + " SELECT resource, owner_token, fence FROM l", d.kind,
      table);
  d.wakeup_channel = "sqllock_" + table;
  // A session's waiters of a name, registered and unregistered (shared, so that any number of
  // processes hold it at once; try: never wait behind a release's exclusive try).
  d.wakeup_register = "SELECT pg_try_advisory_lock_shared(" + pg_waiter_key("CAST($1 AS text)") + ")";
  d.wakeup_unregister = "SELECT pg_advisory_unlock_shared(" + pg_waiter_key("CAST($1 AS text)") + ")";
  return d;
}

}  // namespace sqllock::detail
