// Semaphore permit statements for PostgreSQL, MySQL/MariaDB and SQLite.
#include "dialect/permit_sql.hpp"

#include <string_view>

#include "common/sql_text.hpp"
#include "dialect/per_table_cache.hpp"
#include "dialect/postgresql_keys.hpp"
#include "dialect/postgresql_renew.hpp"

namespace sqllock::detail {
namespace {

// The columns an acquire writes, in the order of its VALUES / SELECT list.
constexpr std::string_view kColumns =
    "(resource, slot, permits, owner_token, holder_session, fence, holder_host, holder_pid, holder_thread, "
    "lease_ms, auto_renew, acquired_at, renewed_at, expires_at)";

permit_sql postgresql(const std::string& table) {
  const auto t = [&](std::string_view text) { return expand_table_template(text, dialect_kind::postgresql, table); };
  permit_sql s;
  s.kind = dialect_kind::postgresql;

  // `free` picks, at random among the slots below N without a live permit in the statement's
  // snapshot, the one to try: at random, so that concurrent acquirers of one name rarely want the
  // same slot. The snapshot may be stale by the time the insert runs, but the decision is the
  // ON CONFLICT arbiter's, which sees the newest version of the (resource, slot) row: a slot
  // taken meanwhile returns (slot, NULL) and the core picks again. As in the lock acquire, a
  // transaction-scoped advisory lock on the (resource, slot) pair is taken before the fence is
  // drawn and the clock read, so fences of one slot rise in the order their grants commit
  // (different slots use different keys and never wait for each other).
  // SQL text laid out by hand: clang-format 14 would break it around each `+`.
  // clang-format off
  s.acquire = t(std::string(R"(
WITH free AS MATERIALIZED (
    SELECT s.slot FROM generate_series(0, CAST($2 AS integer) - 1) AS s(slot)
    WHERE NOT EXISTS (SELECT 1 FROM {{table_permits}} AS p
                      WHERE p.resource = CAST($1 AS text) AND p.slot = s.slot AND p.expires_at > clock_timestamp())
    ORDER BY random() LIMIT 1),
got AS (
    INSERT INTO {{table_permits}} AS p )") + std::string(kColumns) + R"(
    SELECT CAST($1 AS text), f.slot, CAST($2 AS integer), CAST($3 AS text), CAST($4 AS text),
        nextval('{{table_fence_seq}}'), CAST($5 AS text), CAST($6 AS bigint), CAST($7 AS text),
        CAST($8 AS bigint), CAST($9 AS integer) <> 0,
        t.now, t.now, t.now + CAST($8 AS bigint) * interval '1 millisecond'
    FROM free AS f CROSS JOIN LATERAL (
        SELECT clock_timestamp() AS now
        FROM (SELECT pg_advisory_xact_lock(hashtextextended(CAST($1 AS text), 4276953171 + f.slot)) OFFSET 0) AS g
    ) AS t
    ON CONFLICT (resource, slot) DO UPDATE SET
        permits = EXCLUDED.permits,
        owner_token = EXCLUDED.owner_token,
        holder_session = EXCLUDED.holder_session,
        fence = EXCLUDED.fence,
        holder_host = EXCLUDED.holder_host,
        holder_pid = EXCLUDED.holder_pid,
        holder_thread = EXCLUDED.holder_thread,
        lease_ms = EXCLUDED.lease_ms,
        auto_renew = EXCLUDED.auto_renew,
        acquired_at = EXCLUDED.acquired_at,
        renewed_at = EXCLUDED.renewed_at,
        expires_at = EXCLUDED.expires_at
    WHERE p.expires_at <= EXCLUDED.acquired_at
    RETURNING slot, fence)
SELECT f.slot, g.fence FROM free AS f LEFT JOIN got AS g ON g.slot = f.slot)");
  // clang-format on

  s.lease_remaining = t(
      "SELECT GREATEST(0, CAST(EXTRACT(EPOCH FROM (MIN(expires_at) - clock_timestamp())) * 1000 AS bigint)) "
      "FROM {{table_permits}} WHERE resource = $1 AND slot < CAST($2 AS integer) AND expires_at > clock_timestamp()");

  s.release = t(
      "WITH gone AS (DELETE FROM {{table_permits}} "
      "WHERE resource = $1 AND owner_token = $2 AND fence = CAST($3 AS bigint) RETURNING resource) "
      "SELECT " +
      pg_notify_waiters("CAST($4 AS text)", "resource") + " FROM gone");

  // The same rules as the lock renewal (dialect/postgresql_renew.hpp).
  s.renew = t(std::string(kPgRenewClock) + std::string(kPgRenewPermits) +
              " SELECT resource, owner_token, fence FROM p");
  return s;
}

permit_sql mysql(const std::string& table) {
  const auto t = [&](std::string_view text) { return expand_table_template(text, dialect_kind::mysql, table); };
  permit_sql s;
  s.kind = dialect_kind::mysql;

  // No INSERT … SELECT from the permits table itself: under REPEATABLE READ (the autocommit
  // default) it would take shared next-key locks on the range it reads. The free slots are read
  // first, without locks; the client picks one at random and the upsert takes that one key.
  s.picks_slot_on_client = true;
  s.busy_slots = t("SELECT slot FROM {{table_permits}} WHERE resource = $1 AND expires_at > UTC_TIMESTAMP(6)");
  // As the lock acquire: no WHERE on ON DUPLICATE KEY UPDATE, so every column is assigned on the
  // condition that the row's lease has run out, decided on expires_at, which is assigned last;
  // owner_token just before it. VALUES(fence) is the token the BEFORE INSERT trigger drew.
  // Affected rows: 1 inserted, 2 taken over, 0 held by a live permit.
  s.acquire = t(std::string("INSERT INTO {{table_permits}} ") + std::string(kColumns) + R"(
VALUES ($1, $2, $10, $3, $4, 0, $5, $6, $7, $8, $9,
    UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL $8 * 1000 MICROSECOND)
ON DUPLICATE KEY UPDATE
    permits = IF(expires_at <= VALUES(acquired_at), VALUES(permits), permits),
    fence = IF(expires_at <= VALUES(acquired_at), VALUES(fence), fence),
    holder_session = IF(expires_at <= VALUES(acquired_at), VALUES(holder_session), holder_session),
    holder_host = IF(expires_at <= VALUES(acquired_at), VALUES(holder_host), holder_host),
    holder_pid = IF(expires_at <= VALUES(acquired_at), VALUES(holder_pid), holder_pid),
    holder_thread = IF(expires_at <= VALUES(acquired_at), VALUES(holder_thread), holder_thread),
    lease_ms = IF(expires_at <= VALUES(acquired_at), VALUES(lease_ms), lease_ms),
    auto_renew = IF(expires_at <= VALUES(acquired_at), VALUES(auto_renew), auto_renew),
    renewed_at = IF(expires_at <= VALUES(acquired_at), VALUES(renewed_at), renewed_at),
    acquired_at = IF(expires_at <= VALUES(acquired_at), VALUES(acquired_at), acquired_at),
    owner_token = IF(expires_at <= VALUES(acquired_at), VALUES(owner_token), owner_token),
    expires_at = IF(owner_token = VALUES(owner_token), VALUES(expires_at), expires_at))");
  s.acquire_readback = t("SELECT fence FROM {{table_permits}} WHERE resource = $1 AND slot = $2 AND owner_token = $3");
  s.lease_remaining = t(
      "SELECT GREATEST(0, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(expires_at)) DIV 1000) "
      "FROM {{table_permits}} WHERE resource = $1 AND slot < $2 AND expires_at > UTC_TIMESTAMP(6)");
  s.release = t("DELETE FROM {{table_permits}} WHERE resource = $1 AND owner_token = $2 AND fence = $3");
  // The secondary index entry is (holder_session, resource, slot): the UPDATE locks the session's
  // permits in key order already.
  s.renew = t(
      "UPDATE {{table_permits}} SET renewed_at = UTC_TIMESTAMP(6), "
      "expires_at = GREATEST(expires_at, UTC_TIMESTAMP(6) + INTERVAL lease_ms * 1000 MICROSECOND) "
      "WHERE holder_session = $1 AND auto_renew AND expires_at > UTC_TIMESTAMP(6)");
  s.renew_reads_back = true;
  s.renew_readback = t(
      "SELECT resource, owner_token, fence FROM {{table_permits}} "
      "WHERE holder_session = $1 AND auto_renew AND expires_at > UTC_TIMESTAMP(6)");
  return s;
}

permit_sql sqlite(const std::string& table) {
  const auto t = [&](std::string_view text) { return expand_table_template(text, dialect_kind::sqlite, table); };
  permit_sql s;
  s.kind = dialect_kind::sqlite;

  // The MySQL shape (a read of the busy slots, a client-side pick, an upsert of that one key),
  // with RETURNING instead of the read-back. One INSERT … SELECT that picks and takes the lowest
  // free slot would be atomic here too (one writer), but an INSERT that reads its own table makes
  // SQLite buffer the rows in an ephemeral table, and the allocations of the three ephemeral
  // tables that statement needed made an uncontended acquire take ~10 ms (measured: p50 10 ms vs
  // 0.2 ms for a table_lock cycle on the same file). A slot taken between the read and the
  // upsert (another process) returns no row, and the core picks again.
  constexpr std::string_view kNow = "strftime('%Y-%m-%d %H:%M:%f', 'now')";
  s.picks_slot_on_client = true;
  s.busy_slots = t("SELECT slot FROM {{table_permits}} WHERE resource = $1 AND expires_at > " + std::string(kNow));
  s.acquire = t(std::string("INSERT INTO {{table_permits}} ") + std::string(kColumns) + R"(
VALUES ($1, $2, $10, $3, $4, (SELECT value + 1 FROM {{table_fence}} WHERE id = 1), $5, $6, $7, $8, $9,
    strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now'),
    strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || ($8 / 1000.0) || ' seconds'))
ON CONFLICT (resource, slot) DO UPDATE SET
    permits = excluded.permits,
    owner_token = excluded.owner_token,
    holder_session = excluded.holder_session,
    fence = excluded.fence,
    holder_host = excluded.holder_host,
    holder_pid = excluded.holder_pid,
    holder_thread = excluded.holder_thread,
    lease_ms = excluded.lease_ms,
    auto_renew = excluded.auto_renew,
    acquired_at = excluded.acquired_at,
    renewed_at = excluded.renewed_at,
    expires_at = excluded.expires_at
WHERE expires_at <= excluded.acquired_at
RETURNING fence)");
  // clang-format off
  s.lease_remaining = t(
      "SELECT MAX(0, CAST(ROUND((julianday(MIN(expires_at)) - julianday('now')) * 86400000) AS INTEGER)) "
      "FROM {{table_permits}} WHERE resource = $1 AND slot < $2 AND expires_at > " + std::string(kNow));
  // The slot is looked up first so that the DELETE names the whole primary key: with only its
  // first column SQLite collects the rows in an ephemeral table before deleting them, which cost
  // ~0.5 ms per release here (a DELETE by full key deletes as it finds).
  s.release = t(
      "DELETE FROM {{table_permits}} WHERE resource = $1 AND owner_token = $2 AND fence = $3 "
      "AND slot = (SELECT slot FROM {{table_permits}} WHERE resource = $1 AND owner_token = $2 AND fence = $3) "
      "RETURNING resource");
  s.renew = t(
      "UPDATE {{table_permits}} SET renewed_at = " + std::string(kNow) + ", "
      "expires_at = max(expires_at, strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || (lease_ms / 1000.0) || ' seconds')) "
      "WHERE holder_session = $1 AND auto_renew <> 0 AND expires_at > " + std::string(kNow) + " "
      "RETURNING resource, owner_token, fence");
  // clang-format on
  return s;
}

}  // namespace

std::shared_ptr<const permit_sql> permit_statements(dialect_kind kind, const std::string& table) {
  return per_table_cache<permit_sql>::get(kind, table, postgresql, mysql, sqlite);
}

}  // namespace sqllock::detail
