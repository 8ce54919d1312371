// Count-down latch statements for PostgreSQL, MySQL/MariaDB and SQLite.
#include "dialect/latch_sql.hpp"

#include <string_view>

#include "common/sql_text.hpp"
#include "dialect/per_table_cache.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// "$<first>, $<first + 1>, …": `count` placeholders, for a NULL-padded key list.
std::string placeholder_list(std::size_t first, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    if (i) out += ", ";
    out += '$';
    out += std::to_string(first + i);
  }
  return out;
}

// PostgreSQL: one reading of clock_timestamp() per statement where it matters (now() would be the
// caller's transaction start). CAST, never '::', which SOCI would take for a placeholder.
latch_sql postgresql(const std::string& table) {
  latch_sql s;
  s.kind = dialect_kind::postgresql;
  const auto t = [&](std::string_view text) { return expand_table_template(text, s.kind, table); };

  // ON CONFLICT … WHERE: an armed latch (not open, ttl not run out) is left alone and nothing is
  // returned. An open one becomes the next generation of the same latch; one whose ttl ran out is
  // a new latch to its waiters (new created_at), though its generation still goes up, so arrivals
  // of its earlier generations can never be mistaken for this one's.
  s.arm = t(R"(
INSERT INTO {{table_latches}} AS l (resource, count, initial_count, generation, created_at, armed_at,
    opened_at, expires_at)
SELECT CAST($1 AS text), CAST($2 AS bigint), CAST($2 AS bigint), 1, n.now, n.now, NULL,
    n.now + CAST($3 AS bigint) * interval '1 millisecond'
FROM (SELECT clock_timestamp() AS now) AS n
ON CONFLICT (resource) DO UPDATE SET
    generation = l.generation + 1,
    created_at = CASE WHEN l.opened_at IS NOT NULL THEN l.created_at ELSE EXCLUDED.created_at END,
    count = EXCLUDED.count,
    initial_count = EXCLUDED.initial_count,
    armed_at = EXCLUDED.armed_at,
    opened_at = NULL,
    expires_at = EXCLUDED.expires_at
WHERE l.opened_at IS NOT NULL OR l.expires_at <= EXCLUDED.armed_at
RETURNING l.generation)");

  // The UPDATE's row lock orders concurrent count-downs; each sees the count the previous one
  // left (READ COMMITTED re-reads the row after the wait), so exactly the count-down that leaves 0
  // sets opened_at and notifies. The NOTIFY is delivered when the statement commits.
  s.count_down = t(R"(
UPDATE {{table_latches}} SET count = count - 1,
    opened_at = CASE WHEN count = 1 THEN clock_timestamp() END
WHERE resource = CAST($1 AS text) AND count > 0 AND (expires_at IS NULL OR expires_at > clock_timestamp())
RETURNING count, CASE WHEN count = 0 THEN pg_notify(CAST($2 AS text), resource) END)");

  // One statement: `l` locks the latch row first (FOR UPDATE waits for a concurrent count-down and
  // then reads the row as it left it), so the arrival is inserted only while the latch is armed
  // and the decrement — of the row already locked — cannot fail after the insert. Two count-downs
  // of one participant queue on the row lock; the second finds the arrival (the unique index sees
  // committed rows whatever the snapshot) and changes nothing. The decrement matches the row by
  // name only: `l` holds its lock, so the newest version is the one `l` read. Any other test
  // (generation, count > 0) failed when `l` had waited for a re-arm: the UPDATE first meets the
  // row as the statement's snapshot has it (the old, opened generation), drops it on that test
  // without looking at the newest version, and the arrival was recorded but never counted (found
  // by the fault harness's uncounted-arrival check).
  s.count_down_participant = t(R"(
WITH l AS (
    SELECT resource, generation, count,
        count > 0 AND (expires_at IS NULL OR expires_at > clock_timestamp()) AS armed
    FROM {{table_latches}} WHERE resource = CAST($1 AS text) FOR UPDATE),
a AS (
    INSERT INTO {{table_latch_arrivals}} (resource, generation, participant, arrived_at)
    SELECT resource, generation, CAST($2 AS text), clock_timestamp() FROM l WHERE armed
    ON CONFLICT DO NOTHING
    RETURNING generation),
d AS (
    UPDATE {{table_latches}} AS x SET count = x.count - 1,
        opened_at = CASE WHEN x.count = 1 THEN clock_timestamp() END
    FROM a WHERE x.resource = CAST($1 AS text)
    RETURNING x.resource, x.count)
SELECT l.generation, COALESCE(d.count, l.count), CASE WHEN d.count IS NULL THEN 0 ELSE 1 END,
    CASE WHEN l.armed THEN 1 ELSE 0 END,
    CASE WHEN d.count = 0 THEN pg_notify(CAST($3 AS text), d.resource) END
FROM l LEFT JOIN d ON true)");
  s.arrived = t(
      "SELECT 1 FROM {{table_latch_arrivals}} "
      "WHERE resource = CAST($1 AS text) AND generation = CAST($2 AS bigint) AND participant = CAST($3 AS text)");

  constexpr std::string_view kUtcMs = "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'";
  // SQL text laid out by hand: clang-format 14 would break it around each `+`.
  // clang-format off
  s.find = t(
      std::string("SELECT l.count, l.initial_count, l.generation, ")
      + "to_char(l.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), "
      "to_char(l.armed_at AT TIME ZONE 'UTC', " + std::string(kUtcMs) + "), "
      "to_char(l.opened_at AT TIME ZONE 'UTC', " + std::string(kUtcMs) + "), "
      "CASE WHEN l.opened_at IS NULL THEN CAST(floor(EXTRACT(EPOCH FROM (l.expires_at - n.now)) * 1000) AS bigint) END, "
      "CASE WHEN l.opened_at IS NULL AND l.expires_at <= n.now THEN 1 ELSE 0 END "
      "FROM {{table_latches}} AS l CROSS JOIN (SELECT clock_timestamp() AS now) AS n "
      "WHERE l.resource = CAST($1 AS text)");
  // clang-format on
  s.arrivals = t(
      "SELECT participant FROM {{table_latch_arrivals}} "
      "WHERE resource = CAST($1 AS text) AND generation = CAST($2 AS bigint) ORDER BY participant");

  // As the lock reaper: candidates by index against one reading of the clock, locked with SKIP
  // LOCKED (a latch a count-down holds waits for the next pass), re-checked as they are deleted
  // (one re-armed meanwhile stays). The arrivals of a deleted latch go in the same statement, so
  // a latch created later under the name never meets them.
  s.reap_batch = t(R"(
WITH batch AS (
    SELECT resource FROM {{table_latches}}
    WHERE opened_at <= (SELECT clock_timestamp() - CAST($2 AS bigint) * interval '1 millisecond')
       OR (opened_at IS NULL
           AND expires_at <= (SELECT clock_timestamp() - CAST($3 AS bigint) * interval '1 millisecond'))
    LIMIT CAST($1 AS bigint) FOR UPDATE SKIP LOCKED),
gone AS (
    DELETE FROM {{table_latches}} AS l USING batch
    WHERE l.resource = batch.resource
      AND (l.opened_at <= clock_timestamp() - CAST($2 AS bigint) * interval '1 millisecond'
           OR (l.opened_at IS NULL
               AND l.expires_at <= clock_timestamp() - CAST($3 AS bigint) * interval '1 millisecond'))
    RETURNING l.resource),
arrivals AS (
    DELETE FROM {{table_latch_arrivals}} AS a USING gone WHERE a.resource = gone.resource)
SELECT CASE WHEN gone.resource IS NULL THEN 0 ELSE 1 END FROM batch LEFT JOIN gone USING (resource))");
  s.sweep_arrivals = t(R"(
WITH batch AS (
    SELECT a.resource, a.generation, a.participant FROM {{table_latch_arrivals}} AS a
    WHERE NOT EXISTS (SELECT 1 FROM {{table_latches}} AS l
                      WHERE l.resource = a.resource AND l.generation = a.generation)
    LIMIT CAST($1 AS bigint) FOR UPDATE OF a SKIP LOCKED)
DELETE FROM {{table_latch_arrivals}} AS a USING batch
WHERE a.resource = batch.resource AND a.generation = batch.generation AND a.participant = batch.participant
RETURNING 1)");
  return s;
}

// MySQL: UTC_TIMESTAMP(6) is fixed for the whole statement.
latch_sql mysql(const std::string& table) {
  latch_sql s;
  s.kind = dialect_kind::mysql;
  s.begin = "START TRANSACTION";
  const auto t = [&](std::string_view text) { return expand_table_template(text, s.kind, table); };

  // No WHERE on ON DUPLICATE KEY UPDATE: every column is assigned conditionally, and assignments
  // run left to right with later ones seeing earlier results, so opened_at and expires_at — which
  // every decision reads — are assigned last (expires_at reads itself before it changes; opened_at
  // becomes NULL either way: it is NULL already unless the latch is re-armed). Nothing changes for
  // an armed latch, so affected rows say what happened (1 inserted, 2 re-armed, 0 refused; the
  // drivers never set CLIENT_FOUND_ROWS). LAST_INSERT_ID(expr) keeps the generation for read_back:
  // the documented idiom for a value computed by an UPDATE.
  s.arm = t(R"(
INSERT INTO {{table_latches}} (resource, count, initial_count, generation, created_at, armed_at,
    opened_at, expires_at)
VALUES ($1, $2, $2, LAST_INSERT_ID(1), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), NULL,
    UTC_TIMESTAMP(6) + INTERVAL $3 * 1000 MICROSECOND)
ON DUPLICATE KEY UPDATE
    count = IF(opened_at IS NOT NULL OR expires_at <= UTC_TIMESTAMP(6), VALUES(count), count),
    initial_count = IF(opened_at IS NOT NULL OR expires_at <= UTC_TIMESTAMP(6),
                       VALUES(initial_count), initial_count),
    generation = LAST_INSERT_ID(IF(opened_at IS NOT NULL OR expires_at <= UTC_TIMESTAMP(6),
                                   generation + 1, generation)),
    created_at = IF(opened_at IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(created_at), created_at),
    armed_at = IF(opened_at IS NOT NULL OR expires_at <= UTC_TIMESTAMP(6), VALUES(armed_at), armed_at),
    expires_at = IF(opened_at IS NOT NULL OR expires_at <= UTC_TIMESTAMP(6), VALUES(expires_at), expires_at),
    opened_at = NULL)");
  s.reads_back = true;
  s.read_back = "SELECT LAST_INSERT_ID()";

  // 2 round trips, exact under concurrency: the UPDATE's row lock orders count-downs, and
  // LAST_INSERT_ID() is per connection. Assignments run left to right: opened_at sees the new count.
  s.count_down = t(R"(
UPDATE {{table_latches}} SET count = LAST_INSERT_ID(count - 1),
    opened_at = IF(count = 0, UTC_TIMESTAMP(6), NULL)
WHERE resource = $1 AND count > 0 AND (expires_at IS NULL OR expires_at > UTC_TIMESTAMP(6)))");

  // A short READ COMMITTED transaction (record locks only: no gap lock when the latch is absent).
  // The latch row is locked first, so the insert and the decrement see one state of it.
  s.participant_in_transaction = true;
  s.participant_isolation = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
  s.lock_latch = t(
      "SELECT count, generation, count > 0 AND (expires_at IS NULL OR expires_at > UTC_TIMESTAMP(6)) "
      "FROM {{table_latches}} WHERE resource = $1 FOR UPDATE");
  // A no-op update on a duplicate reports 0 affected rows; INSERT IGNORE would also hide errors.
  s.insert_arrival = t(
      "INSERT INTO {{table_latch_arrivals}} (resource, generation, participant, arrived_at) "
      "VALUES ($1, $2, $3, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE participant = participant");
  s.decrement = t(
      "UPDATE {{table_latches}} SET count = count - 1, opened_at = IF(count = 0, UTC_TIMESTAMP(6), NULL) "
      "WHERE resource = $1 AND generation = $2");
  s.arrived = t("SELECT 1 FROM {{table_latch_arrivals}} WHERE resource = $1 AND generation = $2 AND participant = $3");

  constexpr std::string_view kUtcMs = "'%Y-%m-%dT%H:%i:%s.%f'), 23), 'Z')";
  // clang-format off
  s.find = t(
      std::string("SELECT count, initial_count, generation, DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:%s.%f'), ")
      + "CONCAT(LEFT(DATE_FORMAT(armed_at, " + std::string(kUtcMs) + ", "
      "CONCAT(LEFT(DATE_FORMAT(opened_at, " + std::string(kUtcMs) + ", "
      "IF(opened_at IS NULL, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) DIV 1000, NULL), "
      "opened_at IS NULL AND expires_at IS NOT NULL AND expires_at <= UTC_TIMESTAMP(6) "
      "FROM {{table_latches}} WHERE resource = $1");
  // clang-format on
  s.arrivals = t(
      "SELECT participant FROM {{table_latch_arrivals}} WHERE resource = $1 AND generation = $2 "
      "ORDER BY participant");

  // No SKIP LOCKED in a DELETE: one batch is a short READ COMMITTED transaction that locks the
  // candidates (skipping latches a count-down holds), then deletes exactly those and their
  // arrivals by key. Locked, they cannot be re-armed meanwhile, so no re-check is needed.
  s.reap_in_transaction = true;
  s.reap_isolation = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
  s.reap_select = t(
      "SELECT resource FROM {{table_latches}} "
      "WHERE opened_at <= UTC_TIMESTAMP(6) - INTERVAL $2 * 1000 MICROSECOND "
      "OR (opened_at IS NULL AND expires_at <= UTC_TIMESTAMP(6) - INTERVAL $3 * 1000 MICROSECOND) "
      "LIMIT $1 FOR UPDATE SKIP LOCKED");
  s.reap_delete_keys = 100;
  const std::string keys = placeholder_list(1, s.reap_delete_keys);
  s.reap_delete = t("DELETE FROM {{table_latches}} WHERE resource IN (" + keys + ")");
  s.reap_delete_arrivals = t("DELETE FROM {{table_latch_arrivals}} WHERE resource IN (" + keys + ")");
  // Arrivals of a current generation are locked only by the count-down inserting them, which also
  // holds its latch row; under READ COMMITTED the NOT EXISTS reads committed latch rows only.
  s.sweep_isolation = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
  s.sweep_arrivals = t(
      "DELETE FROM {{table_latch_arrivals}} WHERE NOT EXISTS (SELECT 1 FROM {{table_latches}} AS l "
      "WHERE l.resource = {{table_latch_arrivals}}.resource AND l.generation = {{table_latch_arrivals}}.generation) "
      "LIMIT $1");
  return s;
}

// SQLite: 'now' is fixed for the statement; times are stored as 'YYYY-MM-DD HH:MM:SS.SSS' UTC
// (millisecond precision; the text sorts as time does). One writer at a time: every single
// statement is atomic, and the transactions below start with BEGIN IMMEDIATE, taking the write
// lock before their first read (a read that later upgrades to a write could fail with SQLITE_BUSY
// at once instead of waiting).
constexpr std::string_view kLiteNow = "strftime('%Y-%m-%d %H:%M:%f', 'now')";

latch_sql sqlite(const std::string& table) {
  latch_sql s;
  s.kind = dialect_kind::sqlite;
  s.begin = "BEGIN IMMEDIATE";
  const auto t = [&](std::string_view text) { return expand_table_template(text, s.kind, table); };
  const std::string now(kLiteNow);

  // In an upsert's DO UPDATE, bare column names are the existing row and excluded.* the attempted
  // one; all SET expressions see the old row.
  // clang-format off
  s.arm = t(R"(
INSERT INTO {{table_latches}} (resource, count, initial_count, generation, created_at, armed_at,
    opened_at, expires_at)
VALUES ($1, $2, $2, 1, )" + now + ", " + now + R"(, NULL,
    CASE WHEN $3 IS NULL THEN NULL ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || ($3 / 1000.0) || ' seconds') END)
ON CONFLICT (resource) DO UPDATE SET
    generation = generation + 1,
    created_at = CASE WHEN opened_at IS NOT NULL THEN created_at ELSE excluded.created_at END,
    count = excluded.count,
    initial_count = excluded.initial_count,
    armed_at = excluded.armed_at,
    opened_at = NULL,
    expires_at = excluded.expires_at
WHERE opened_at IS NOT NULL OR expires_at <= excluded.armed_at
RETURNING generation)");

  s.count_down = t(
      "UPDATE {{table_latches}} SET count = count - 1, opened_at = CASE WHEN count = 1 THEN " + now + " END "
      "WHERE resource = $1 AND count > 0 AND (expires_at IS NULL OR expires_at > " + now + ") RETURNING count");

  s.participant_in_transaction = true;
  s.lock_latch = t("SELECT count, generation, count > 0 AND (expires_at IS NULL OR expires_at > " + now +
                   ") FROM {{table_latches}} WHERE resource = $1");
  s.insert_arrival = t(
      "INSERT INTO {{table_latch_arrivals}} (resource, generation, participant, arrived_at) "
      "VALUES ($1, $2, $3, " + now + ") ON CONFLICT DO NOTHING");
  s.decrement = t("UPDATE {{table_latches}} SET count = count - 1, opened_at = CASE WHEN count = 1 THEN " + now +
                  " END WHERE resource = $1 AND generation = $2");
  s.arrived = t(
      "SELECT 1 FROM {{table_latch_arrivals}} WHERE resource = $1 AND generation = $2 AND participant = $3");

  s.find = t(
      "SELECT count, initial_count, generation, created_at, replace(armed_at, ' ', 'T') || 'Z', "
      "replace(opened_at, ' ', 'T') || 'Z', "
      "CASE WHEN opened_at IS NULL THEN CAST(ROUND((julianday(expires_at) - julianday('now')) * 86400000) AS INTEGER) END, "
      "opened_at IS NULL AND expires_at IS NOT NULL AND expires_at <= " + now + " "
      "FROM {{table_latches}} WHERE resource = $1");
  // clang-format on
  s.arrivals = t(
      "SELECT participant FROM {{table_latch_arrivals}} WHERE resource = $1 AND generation = $2 "
      "ORDER BY participant");

  // Under the write lock of BEGIN IMMEDIATE the candidates cannot change before they are deleted.
  s.reap_in_transaction = true;
  s.reap_select = t(
      "SELECT resource FROM {{table_latches}} "
      "WHERE opened_at <= strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ($2 / 1000.0) || ' seconds') "
      "OR (opened_at IS NULL AND expires_at <= strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ($3 / 1000.0) || ' seconds')) "
      "LIMIT $1");
  s.reap_delete_keys = 100;
  const std::string keys = placeholder_list(1, s.reap_delete_keys);
  s.reap_delete = t("DELETE FROM {{table_latches}} WHERE resource IN (" + keys + ")");
  s.reap_delete_arrivals = t("DELETE FROM {{table_latch_arrivals}} WHERE resource IN (" + keys + ")");
  s.sweep_arrivals = t(
      "DELETE FROM {{table_latch_arrivals}} WHERE (resource, generation, participant) IN ("
      "SELECT a.resource, a.generation, a.participant FROM {{table_latch_arrivals}} AS a "
      "WHERE NOT EXISTS (SELECT 1 FROM {{table_latches}} AS l "
      "WHERE l.resource = a.resource AND l.generation = a.generation) LIMIT $1)");
  return s;
}

}  // namespace

std::shared_ptr<const latch_sql> latch_statements(dialect_kind kind, const std::string& table) {
  return per_table_cache<latch_sql>::get(kind, table, postgresql, mysql, sqlite);
}

}  // namespace sqllock::detail
