// Wait-queue statements (fair locks, read-write locks) for PostgreSQL, MySQL/MariaDB and SQLite.
#include "dialect/queue_sql.hpp"

#include <string_view>

#include "common/sql_text.hpp"
#include "dialect/per_table_cache.hpp"
#include "dialect/postgresql_keys.hpp"
#include "dialect/postgresql_renew.hpp"

namespace sqllock::detail {
namespace {

// The columns an enqueue writes, in the order of its VALUES / SELECT list.
constexpr std::string_view kColumns =
    "(resource, kind, ticket, owner_token, holder_session, write_count, read_count, holder_host, holder_pid, "
    "holder_thread, lease_ms, auto_renew, enqueued_at, renewed_at, expires_at)";

// The columns an enqueue that replaces its owner's expired entry takes from the new one, besides
// the counts; expires_at (which every decision reads) is kept for last.
constexpr std::string_view kReplaced[] = {"ticket",   "holder_session", "holder_host", "holder_pid", "holder_thread",
                                          "lease_ms", "auto_renew",     "enqueued_at", "renewed_at", "expires_at"};

// One "col = <pattern with @ as the column>" assignment per column of kReplaced.
std::string replaced_assignments(std::string_view pattern) {
  std::string out;
  for (const auto col : kReplaced) {
    out.append(",\n    ").append(col).append(" = ");
    for (const char c : pattern) {
      if (c == '@')
        out.append(col);
      else
        out.push_back(c);
    }
  }
  return out;
}

// The statement's key for entry ($1 resource, $2 kind, $3 ticket, $4 owner).
constexpr std::string_view kPgEntry =
    "resource = CAST($1 AS text) AND kind = CAST($2 AS text) AND ticket = CAST($3 AS bigint) "
    "AND owner_token = CAST($4 AS text)";
constexpr std::string_view kEntry = "resource = $1 AND kind = $2 AND ticket = $3 AND owner_token = $4";

// Release of a level ($5: 1 write, 0 read): the delete of a last level, the decrement of any other.
constexpr std::string_view kLastLevel = "write_count = $5 AND read_count = 1 - $5";
constexpr std::string_view kDecrement = "write_count = write_count - $5, read_count = read_count - (1 - $5)";
constexpr std::string_view kNotLastLevel =
    "write_count >= $5 AND read_count >= 1 - $5 AND write_count + read_count > 1";

// The per-name advisory key an enqueue takes before it draws its ticket: its own seed, so that it
// never waits for lock rows (dialect/postgresql_keys.hpp) or permits (permit_sql.cpp) of the name.
constexpr std::string_view kPgQueueKey = "hashtextextended(CAST($1 AS text), 3141592653589793238)";

// The blockers a check looks at: the first kCheckWindow entries ahead that block the entry, in
// ticket order. A check costs the same at any place in the queue; a place further back reads
// "kCheckWindow blockers" (or more), which is all its waiter needs to know.
constexpr int kCheckWindow = 32;
const std::string kWindow = std::to_string(kCheckWindow);

// The blockers of the entry ($1 resource, $2 kind, $3 ticket, $4 owner): the entries ahead, or
// only the writers ahead when the entry is a reader (its mode as stored now; a writer's when the
// entry is gone), in ticket order. `alias` names the table in the condition.
std::string blockers_condition(std::string_view alias, std::string_view me_write_count) {
  const std::string a(alias);
  return a + ".resource = $1 AND " + a + ".kind = $2 AND " + a + ".ticket < $3 AND (" + a +
         ".write_count > 0 OR COALESCE(" + std::string(me_write_count) + ", 1) > 0)";
}

// The check's read where the check is two statements (MySQL, SQLite): `now` is the dialect's
// clock, `wait_ms` its "milliseconds (≥ 0) until MIN(a.expires_at), NULL when no row counts". It
// reads the window of blockers still there (expiry is the delete's to decide), and how many of
// them have expired, and the last ticket of the window: the delete's bound.
std::string check_read_text(std::string_view now, std::string_view wait_ms) {
  const std::string me_write_count =
      "(SELECT m.write_count FROM {{table_queue}} AS m WHERE m.resource = $1 AND m.kind = $2 AND m.ticket = $3 "
      "AND m.owner_token = $4)";
  // SQL text laid out by hand: clang-format 14 would break it around each `+`.
  // clang-format off
  return std::string(R"(
SELECT (SELECT COUNT(*) FROM {{table_queue}} AS m
        WHERE m.resource = $1 AND m.kind = $2 AND m.ticket = $3 AND m.owner_token = $4
          AND m.expires_at > )") + std::string(now) + R"(),
    COUNT(*),
    )" + std::string(wait_ms) + R"(,
    COALESCE(SUM(CASE WHEN a.expires_at <= )" + std::string(now) + R"( THEN 1 ELSE 0 END), 0),
    MAX(a.ticket)
FROM (SELECT b.ticket, b.expires_at FROM {{table_queue}} AS b
      WHERE )" + blockers_condition("b", me_write_count) + R"(
      ORDER BY b.ticket LIMIT )" + kWindow + R"() AS a)";
  // clang-format on
}

queue_sql postgresql(const std::string& table) {
  const auto t = [&](std::string_view text) { return expand_table_template(text, dialect_kind::postgresql, table); };
  queue_sql s;
  s.kind = dialect_kind::postgresql;

  // As the lock acquire (postgresql.cpp): the advisory lock on the name is taken first (OFFSET 0
  // keeps it from being folded away), and the ticket drawn and the clock read only after it, so
  // two enqueues of one name never interleave from draw to commit. The arbiter is the owner's
  // unique key (a new ticket never collides); a live entry gets a level, an expired one is
  // replaced whole with the ticket just drawn. No WHERE on DO UPDATE: a refused upgrade must
  // still return the entry (T5: a row not updated is not returned).
  // clang-format off
  s.enqueue = t(std::string("INSERT INTO {{table_queue}} AS e ") + std::string(kColumns) + R"(
SELECT CAST($1 AS text), CAST($2 AS text), nextval('{{table_fence_seq}}'), CAST($3 AS text), CAST($4 AS text),
    CAST($10 AS bigint), 1 - CAST($10 AS bigint), CAST($5 AS text), CAST($6 AS bigint), CAST($7 AS text),
    CAST($8 AS bigint), CAST($9 AS integer) <> 0, t.now, t.now, t.now + CAST($8 AS bigint) * interval '1 millisecond'
FROM (SELECT clock_timestamp() AS now
      FROM (SELECT pg_advisory_xact_lock()" + std::string(kPgQueueKey) + R"() OFFSET 0) AS g
     ) AS t
ON CONFLICT (resource, kind, owner_token) DO UPDATE SET
    write_count = CASE WHEN e.expires_at <= EXCLUDED.enqueued_at THEN EXCLUDED.write_count
                       WHEN EXCLUDED.write_count > 0 AND e.write_count > 0 THEN e.write_count + 1
                       ELSE e.write_count END,
    read_count = CASE WHEN e.expires_at <= EXCLUDED.enqueued_at THEN EXCLUDED.read_count
                      WHEN EXCLUDED.read_count > 0 THEN e.read_count + 1
                      ELSE e.read_count END)" +
                replaced_assignments("CASE WHEN e.expires_at <= EXCLUDED.enqueued_at THEN EXCLUDED.@ ELSE e.@ END") +
                "\nRETURNING ticket, write_count, read_count");

  // One statement. The window of blockers is read from the statement's snapshot, which began
  // after this entry's enqueue committed and so holds every lower ticket (T2, T3). Its expired
  // entries are locked in ticket order (as the renewal locks its rows in key order) and deleted;
  // FOR UPDATE re-reads a row changed meanwhile and drops it when it is no longer expired
  // (renewed) or gone. The rows the delete removed are still in the snapshot and are left out by
  // `gone`. Every other entry of the window counts: one renewed after the snapshot is live, one
  // deleted by another check meanwhile is counted once more (the next check sees it gone). A full
  // window that the delete emptied leaves the entries behind it unread: one more blocker, wait 0.
  s.check = t(R"(
WITH c AS MATERIALIZED (SELECT clock_timestamp() AS now),
me AS MATERIALIZED (
    SELECT write_count, expires_at > (SELECT now FROM c) AS live FROM {{table_queue}}
    WHERE )" + std::string(kPgEntry) + R"(),
win AS MATERIALIZED (
    SELECT b.ticket, b.expires_at FROM {{table_queue}} AS b
    WHERE b.resource = CAST($1 AS text) AND b.kind = CAST($2 AS text) AND b.ticket < CAST($3 AS bigint)
      AND (b.write_count > 0 OR COALESCE((SELECT write_count FROM me), 1) > 0)
    ORDER BY b.ticket LIMIT )" + kWindow + R"(),
doomed AS MATERIALIZED (
    SELECT x.ticket FROM {{table_queue}} AS x
    WHERE x.resource = CAST($1 AS text) AND x.kind = CAST($2 AS text)
      AND x.ticket IN (SELECT ticket FROM win WHERE expires_at <= (SELECT now FROM c))
      AND x.expires_at <= (SELECT now FROM c)
    ORDER BY x.ticket FOR UPDATE),
gone AS (
    DELETE FROM {{table_queue}} AS x USING doomed AS d, c
    WHERE x.resource = CAST($1 AS text) AND x.kind = CAST($2 AS text) AND x.ticket = d.ticket
      AND x.expires_at <= c.now
    RETURNING x.ticket),
left_ AS (
    SELECT a.expires_at FROM win AS a WHERE NOT EXISTS (SELECT 1 FROM gone AS g WHERE g.ticket = a.ticket))
SELECT COALESCE((SELECT CASE WHEN live THEN 1 ELSE 0 END FROM me), 0),
    (SELECT count(*) FROM left_) + CASE WHEN (SELECT count(*) FROM win) = )" + kWindow + R"(
                                         AND NOT EXISTS (SELECT 1 FROM left_) THEN 1 ELSE 0 END,
    CASE WHEN EXISTS (SELECT 1 FROM left_)
         THEN GREATEST(0, CAST(EXTRACT(EPOCH FROM ((SELECT MIN(expires_at) FROM left_) - (SELECT now FROM c))) * 1000
                               AS bigint))
         WHEN (SELECT count(*) FROM win) = )" + kWindow + R"( THEN 0 END)");

  // The two data-modifying parts exclude each other by the counts, which only the owner changes.
  // The NOTIFY (delivered at commit) wakes the waiters of the name when the entry left or became a
  // reader: either can let entries behind it hold.
  s.release = t(std::string(R"(
WITH d AS (
    DELETE FROM {{table_queue}} WHERE )") + std::string(kPgEntry) + R"(
      AND write_count = CAST($5 AS bigint) AND read_count = 1 - CAST($5 AS bigint)
    RETURNING resource, CAST(0 AS bigint) AS write_count, CAST(0 AS bigint) AS read_count, true AS moved),
u AS (
    UPDATE {{table_queue}} SET write_count = write_count - CAST($5 AS bigint),
        read_count = read_count - (1 - CAST($5 AS bigint))
    WHERE )" + std::string(kPgEntry) + R"(
      AND write_count >= CAST($5 AS bigint) AND read_count >= 1 - CAST($5 AS bigint) AND write_count + read_count > 1
    RETURNING resource, write_count, read_count, CAST($5 AS bigint) = 1 AND write_count = 0 AS moved)
SELECT write_count, read_count, CASE WHEN moved THEN )" + pg_notify_waiters("CAST($6 AS text)", "resource") + R"( END
FROM (SELECT * FROM d UNION ALL SELECT * FROM u) AS x)");
  // clang-format on

  s.leave = t("WITH gone AS (DELETE FROM {{table_queue}} WHERE " + std::string(kPgEntry) +
              " RETURNING resource) SELECT " + pg_notify_waiters("CAST($5 AS text)", "resource") + " FROM gone");

  // Rows locked in key order, then renewed (dialect/postgresql_renew.hpp).
  s.renew = t(std::string(kPgRenewClock) + std::string(kPgRenewQueue) +
              " SELECT resource, owner_token, ticket, kind FROM q");
  return s;
}

queue_sql mysql(const std::string& table) {
  const auto t = [&](std::string_view text) { return expand_table_template(text, dialect_kind::mysql, table); };
  queue_sql s;
  s.kind = dialect_kind::mysql;

  // The BEFORE INSERT trigger draws the ticket from the lock table's counter row (its lock lasts
  // until this statement commits: T3) and VALUES(ticket) is that ticket. The duplicate is found
  // on the owner's unique key (a new ticket never collides with the primary key). Every decision
  // reads expires_at, which is assigned last; the counts read only their own old value.
  s.enqueue = t(std::string("INSERT INTO {{table_queue}} ") + std::string(kColumns) + R"(
VALUES ($1, $2, 0, $3, $4, $10, 1 - $10, $5, $6, $7, $8, $9,
    UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL $8 * 1000 MICROSECOND)
ON DUPLICATE KEY UPDATE
    write_count = IF(expires_at <= VALUES(enqueued_at), VALUES(write_count),
                     IF(VALUES(write_count) > 0 AND write_count > 0, write_count + 1, write_count)),
    read_count = IF(expires_at <= VALUES(enqueued_at), VALUES(read_count),
                    IF(VALUES(read_count) > 0, read_count + 1, read_count)))" +
                replaced_assignments("IF(expires_at <= VALUES(enqueued_at), VALUES(@), @)"));
  s.enqueue_reads_back = true;
  s.enqueue_readback = t(
      "SELECT ticket, write_count, read_count FROM {{table_queue}} WHERE resource = $1 AND kind = $2 AND owner_token = $3");

  // The read comes first: a consistent non-locking read. Only when it finds expired blockers does
  // the delete run, and the read again, on a snapshot taken after the delete committed. The delete
  // reads the newest committed version of each row under its lock. The primary key is forced
  // (multi-table DELETE form): through the expires_at index the scan would lock expired entries
  // of every name and the index gap where new entries' expiries go. At REPEATABLE READ the range
  // scan also locks the entries up to the window's last ticket and the gaps between them — never
  // the gap above the highest ticket, where every enqueue inserts (the next record ends the scan).
  s.check = t(
      "DELETE x FROM {{table_queue}} AS x FORCE INDEX (PRIMARY) "
      "WHERE x.resource = $1 AND x.kind = $2 AND x.ticket < $3 AND x.ticket <= $5 "
      "AND x.expires_at <= UTC_TIMESTAMP(6) AND x.owner_token <> $4");
  s.check_read = t(check_read_text(
      "UTC_TIMESTAMP(6)",
      "IF(COUNT(*) = 0, NULL, GREATEST(0, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(a.expires_at)) DIV 1000))"));

  // Point statements by the full primary key.
  s.release = t("DELETE FROM {{table_queue}} WHERE " + std::string(kEntry) + " AND " + std::string(kLastLevel));
  s.release_decrement = t("UPDATE {{table_queue}} SET " + std::string(kDecrement) + " WHERE " + std::string(kEntry) +
                          " AND " + std::string(kNotLastLevel));
  s.release_reads_back = true;
  s.release_readback = t("SELECT write_count, read_count FROM {{table_queue}} WHERE " + std::string(kEntry));
  s.leave = t("DELETE FROM {{table_queue}} WHERE " + std::string(kEntry));

  // As the lock renewal (mysql.cpp), with the session's index forced: the secondary index entry is
  // (holder_session, resource, kind, ticket), so the UPDATE locks the session's entries in key
  // order, as the check locks the entries ahead of it — never in an order that could deadlock
  // with it. On a small table the optimizer chose the expires_at range instead, which at
  // REPEATABLE READ locks every live entry of every session and the index gap where every
  // enqueue inserts its expiry.
  s.renew = t(
      "UPDATE {{table_queue}} FORCE INDEX ({{table_queue_sess}}) SET renewed_at = UTC_TIMESTAMP(6), "
      "expires_at = GREATEST(expires_at, UTC_TIMESTAMP(6) + INTERVAL lease_ms * 1000 MICROSECOND) "
      "WHERE holder_session = $1 AND auto_renew AND expires_at > UTC_TIMESTAMP(6)");
  s.renew_reads_back = true;
  s.renew_readback = t(
      "SELECT resource, owner_token, ticket, kind FROM {{table_queue}} "
      "WHERE holder_session = $1 AND auto_renew AND expires_at > UTC_TIMESTAMP(6)");
  return s;
}

queue_sql sqlite(const std::string& table) {
  const auto t = [&](std::string_view text) { return expand_table_template(text, dialect_kind::sqlite, table); };
  const std::string now = "strftime('%Y-%m-%d %H:%M:%f', 'now')";
  queue_sql s;
  s.kind = dialect_kind::sqlite;

  // One writer at a time: drawing value + 1 from the high-water table and storing it back (the
  // table's triggers) cannot interleave with another draw, and the entry commits before the next
  // draw. In DO UPDATE every expression sees the old row.
  s.enqueue = t(std::string("INSERT INTO {{table_queue}} ") + std::string(kColumns) + R"(
VALUES ($1, $2, (SELECT value + 1 FROM {{table_fence}} WHERE id = 1), $3, $4, $10, 1 - $10, $5, $6, $7, $8, $9,
    strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now'),
    strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || ($8 / 1000.0) || ' seconds'))
ON CONFLICT (resource, kind, owner_token) DO UPDATE SET
    write_count = CASE WHEN expires_at <= excluded.enqueued_at THEN excluded.write_count
                       WHEN excluded.write_count > 0 AND write_count > 0 THEN write_count + 1
                       ELSE write_count END,
    read_count = CASE WHEN expires_at <= excluded.enqueued_at THEN excluded.read_count
                      WHEN excluded.read_count > 0 THEN read_count + 1
                      ELSE read_count END)" +
                replaced_assignments("CASE WHEN expires_at <= excluded.enqueued_at THEN excluded.@ ELSE @ END") +
                "\nRETURNING ticket, write_count, read_count");

  // Autocommit statements, each atomic under the one writer: the read, and only when it finds
  // expired blockers the delete and the read again — so a waiter's check takes no write lock while
  // nothing ahead has expired. The delete has no RETURNING and the table no DELETE trigger, so
  // SQLite deletes as it scans (no ephemeral table of keys). The read counts every blocker of the
  // window that is still there (see the header: expiry is the delete's).
  s.check = t(
      "DELETE FROM {{table_queue}} WHERE resource = $1 AND kind = $2 AND ticket < $3 AND ticket <= $5 "
      "AND expires_at <= " +
      now + " AND owner_token <> $4");
  s.check_read = t(check_read_text(
      now,
      "CASE WHEN COUNT(*) > 0 "
      "THEN MAX(0, CAST(ROUND((julianday(MIN(a.expires_at)) - julianday('now')) * 86400000) AS INTEGER)) END"));

  // Point statements by the full primary key; the delete reports by its affected count (no
  // RETURNING, which SQLite buffers in an ephemeral table).
  s.release = t("DELETE FROM {{table_queue}} WHERE " + std::string(kEntry) + " AND " + std::string(kLastLevel));
  s.release_decrement = t("UPDATE {{table_queue}} SET " + std::string(kDecrement) + " WHERE " + std::string(kEntry) +
                          " AND " + std::string(kNotLastLevel) + " RETURNING write_count, read_count");
  s.leave = t("DELETE FROM {{table_queue}} WHERE " + std::string(kEntry));

  // clang-format off
  s.renew = t(
      "UPDATE {{table_queue}} SET renewed_at = " + now + ", "
      "expires_at = max(expires_at, strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || (lease_ms / 1000.0) || ' seconds')) "
      "WHERE holder_session = $1 AND auto_renew <> 0 AND expires_at > " + now + " "
      "RETURNING resource, owner_token, ticket, kind");
  // clang-format on
  return s;
}

}  // namespace

std::shared_ptr<const queue_sql> queue_statements(dialect_kind kind, const std::string& table) {
  return per_table_cache<queue_sql>::get(kind, table, postgresql, mysql, sqlite);
}

}  // namespace sqllock::detail
