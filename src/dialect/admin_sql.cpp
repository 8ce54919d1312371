// Operator statements (reaper, status, forced release) for PostgreSQL, MySQL/MariaDB and SQLite.
#include "dialect/admin_sql.hpp"

#include <string_view>

#include "common/sql_text.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// What differs between the lease tables the operator statements work on: the lock table (one
// row per resource), the permits table (one row per resource and slot, migration 0003) and the
// wait queue (one row per resource, kind and ticket, migration 0005). Permit rows list the lock
// columns with a count of 1, then slot and permits (kPermitColumns); queue rows list their levels
// as the count, the ticket as the fence and enqueued_at as acquired_at, then kind and the two
// level counts (kQueueColumns).
struct table_shape {
  std::string_view table;     // the template of the table's name
  std::string_view key;       // its primary key columns
  std::size_t key_columns;    // how many
  std::string_view count;     // the count column (an expression of the row's columns)
  std::string_view fence;     // the fencing-token column
  std::string_view acquired;  // when the hold (for the queue: the place) began
  std::string_view extra;     // columns listed after kLockColumns
  std::string_view same;      // rows `l` and `batch` have the same key
  std::string_view l_key;     // the key columns of row `l`
  std::string_view scope;     // the column the by-resource statements narrow down, or empty
};
// Wrapped by hand: clang-format 14 would put most shapes one field per line.
// clang-format off
constexpr table_shape kLockShape{"{{table}}", "resource", 1, "count", "fence", "acquired_at", "",
                                 "l.resource = batch.resource", "l.resource", ""};
constexpr table_shape kPermitShape{"{{table_permits}}", "resource, slot", 2, "1", "fence", "acquired_at",
                                   ", slot, permits", "l.resource = batch.resource AND l.slot = batch.slot",
                                   "l.resource, l.slot", ""};
constexpr table_shape kQueueShape{
    "{{table_queue}}", "resource, kind, ticket", 3, "write_count + read_count", "ticket", "enqueued_at",
    ", kind, write_count, read_count",
    "l.resource = batch.resource AND l.kind = batch.kind AND l.ticket = batch.ticket", "l.resource, l.kind, l.ticket",
    "kind"};
// clang-format on

// `text` with the shape's parts in place of {{table}}, {{key}}, {{count}}, {{fence}},
// {{acquired}}, {{extra}}, {{same}} and {{l_key}}.
std::string shaped(std::string_view text, const table_shape& sh) {
  std::string out(text);
  const std::pair<std::string_view, std::string_view> subs[] = {
      {"{{table}}", sh.table},       {"{{key}}", sh.key},     {"{{count}}", sh.count}, {"{{fence}}", sh.fence},
      {"{{acquired}}", sh.acquired}, {"{{extra}}", sh.extra}, {"{{same}}", sh.same},   {"{{l_key}}", sh.l_key}};
  for (const auto& [from, to] : subs)
    for (std::size_t p = 0; (p = out.find(from, p)) != std::string::npos; p += to.size())
      out.replace(p, from.size(), to);
  return out;
}

// The condition that narrows a by-resource statement to the scope's two values, bound as $first
// and $first + 1 (admin_sql::scope_params); empty for a shape without a scope.
std::string scope_condition(const table_shape& sh, std::size_t first) {
  if (sh.scope.empty()) return "";
  return " AND " + std::string(sh.scope) + " IN ($" + std::to_string(first) + ", $" + std::to_string(first + 1) + ")";
}

// PostgreSQL: `l` is the lock row, `n.now` one reading of clock_timestamp() for the statement
// (now() would be the transaction's start). CAST, never '::', which SOCI would take for a
// placeholder.
constexpr std::string_view kPgColumns =
    "l.resource, l.owner_token, l.holder_host, l.holder_pid, l.holder_thread, {{count}}, l.{{fence}}, "
    "to_char(l.{{acquired}} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "CAST(floor(EXTRACT(EPOCH FROM (l.expires_at - n.now)) * 1000) AS bigint), "
    "CASE WHEN l.expires_at <= n.now THEN 1 ELSE 0 END{{extra}}";
constexpr std::string_view kPgNow = "(SELECT clock_timestamp() AS now) AS n";

admin_sql postgresql(const std::string& table, const table_shape& sh) {
  admin_sql a;
  a.kind = dialect_kind::postgresql;
  const auto expand = [&](std::string_view text) { return expand_table_template(shaped(text, sh), a.kind, table); };

  // The candidates are picked by the expires_at index against one reading of the clock (a
  // scalar subquery is evaluated once, so the index can use it) and locked with SKIP LOCKED, so
  // the reaper never waits for a row another transaction holds. A CTE that locks rows runs
  // exactly once. The DELETE re-checks expiry on the locked row: a renewal that committed
  // before the lock was taken wins, one that comes after finds the row gone. One row per
  // candidate, 1 when deleted and 0 when a renewal saved it: a batch full of candidates means
  // there may be more expired rows, even when renewals saved some of these.
  a.reap_batch = expand(
      "WITH batch AS ("
      " SELECT {{key}} FROM {{table}}"
      " WHERE expires_at <= (SELECT clock_timestamp() - CAST($2 AS bigint) * interval '1 millisecond')"
      " ORDER BY expires_at LIMIT CAST($1 AS bigint) FOR UPDATE SKIP LOCKED),"
      " gone AS (DELETE FROM {{table}} AS l USING batch"
      " WHERE {{same}}"
      " AND l.expires_at <= clock_timestamp() - CAST($2 AS bigint) * interval '1 millisecond'"
      " RETURNING {{l_key}})"
      " SELECT CASE WHEN gone.resource IS NULL THEN 0 ELSE 1 END FROM batch LEFT JOIN gone USING ({{key}})");

  a.list_locks = expand("SELECT " + std::string(kPgColumns) + " FROM {{table}} AS l CROSS JOIN " + std::string(kPgNow) +
                        " ORDER BY {{l_key}}");
  a.find_lock = expand("SELECT " + std::string(kPgColumns) + " FROM {{table}} AS l CROSS JOIN " + std::string(kPgNow) +
                       " WHERE l.resource = $1" + scope_condition(sh, 2) + " ORDER BY {{l_key}}");

  // pg_locks spells an advisory key as (classid, objid, objsubid): objsubid 1 is one bigint
  // key split into its high and low 32 bits; objsubid 2 is two int4 keys stored as unsigned oids.
  constexpr std::string_view kSigned32 =
      "(CASE WHEN CAST(%s AS bigint) >= 2147483648 THEN CAST(%s AS bigint) - 4294967296 "
      "ELSE CAST(%s AS bigint) END)";
  auto signed32 = [&](std::string_view col) {
    std::string out(kSigned32);
    for (std::size_t p; (p = out.find("%s")) != std::string::npos;) out.replace(p, 2, col);
    return out;
  };
  // SQL text laid out by hand: clang-format 14 would break it around each `+`.
  // clang-format off
  a.advisory_locks =
      "SELECT pid, "
      "CASE WHEN objsubid = 1 THEN (CAST(classid AS bigint) << 32) | CAST(objid AS bigint) "
      "ELSE " + signed32("classid") + " END, "
      "CASE WHEN objsubid = 2 THEN " + signed32("objid") + " END, "
      "mode, CASE WHEN granted THEN 1 ELSE 0 END "
      "FROM pg_locks WHERE locktype = 'advisory' "
      "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
      "ORDER BY objsubid, classid, objid, granted DESC, pid";

  // The NOTIFY wakes waiters at once, as an ordinary release does; it is sent on commit.
  a.force_release = expand(
      "WITH gone AS (DELETE FROM {{table}} WHERE resource = $1" + scope_condition(sh, 3) + " RETURNING *) "
      "SELECT " + std::string(kPgColumns) + ", pg_notify(CAST($2 AS text), l.resource) "
      "FROM gone AS l CROSS JOIN " + std::string(kPgNow));
  // clang-format on
  return a;
}

// MySQL: UTC_TIMESTAMP(6) is fixed for the whole statement.
constexpr std::string_view kMyColumns =
    "resource, owner_token, holder_host, holder_pid, holder_thread, {{count}}, {{fence}}, "
    "CONCAT(LEFT(DATE_FORMAT({{acquired}}, '%Y-%m-%dT%H:%i:%s.%f'), 23), 'Z'), "
    "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) DIV 1000, "
    "expires_at <= UTC_TIMESTAMP(6){{extra}}";

admin_sql mysql(const std::string& table, const table_shape& sh) {
  admin_sql a;
  a.kind = dialect_kind::mysql;
  a.begin = "START TRANSACTION";
  const auto expand = [&](std::string_view text) { return expand_table_template(shaped(text, sh), a.kind, table); };

  // DELETE has neither SKIP LOCKED nor a LIMIT inside a subquery of its own table, so one batch
  // is a short transaction: lock the candidates with SKIP LOCKED (MySQL 8, MariaDB 10.6+), then
  // delete exactly those by primary key, re-checking expiry. READ COMMITTED takes record locks
  // only; REPEATABLE READ would also lock the index gaps the range scan passes, blocking
  // acquires that insert new rows there.
  a.reap_in_transaction = true;
  a.reap_isolation = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
  // Each batch resumes the index scan where the previous one ended: InnoDB keeps deleted
  // records in the index until purge catches up, and a scan from the start would step over every
  // row the pass already deleted (quadratic over a large backlog). `>=` revisits the rows at the
  // boundary time; those deleted are gone, those locked are skipped again.
  a.reap_select = expand(
      "SELECT {{key}}, DATE_FORMAT(expires_at, '%Y-%m-%d %H:%i:%s.%f') FROM {{table}} "
      "WHERE expires_at <= UTC_TIMESTAMP(6) - INTERVAL $2 * 1000 MICROSECOND AND expires_at >= $3 "
      "ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED");
  a.reap_resume_start = "1000-01-01 00:00:00";
  // Exactly the rows the select locked, by their whole primary key: a delete by resource alone
  // would also wait for the name's other rows, which a check of the wait queue may hold locked
  // while it waits for one of ours. A fixed number of keys keeps one prepared statement; unused
  // slots are bound to NULL, which matches nothing.
  a.reap_delete_keys = 500;
  a.reap_key_columns = sh.key_columns;
  std::string keys;
  std::size_t param = 2;
  for (std::size_t i = 0; i < a.reap_delete_keys; ++i) {
    keys += i ? ", (" : "(";
    for (std::size_t c = 0; c < sh.key_columns; ++c) keys += (c ? ", $" : "$") + std::to_string(param++);
    keys += ")";
  }
  // FORCE INDEX (PRIMARY) (which needs the multi-table DELETE form): with bound keys the
  // optimizer may otherwise scan the expires_at range and wait for rows other transactions hold.
  // clang-format off
  a.reap_delete = expand(
      "DELETE l FROM {{table}} AS l FORCE INDEX (PRIMARY) "
      "WHERE ({{l_key}}) IN (" + keys + ") AND l.expires_at <= UTC_TIMESTAMP(6) - INTERVAL $1 * 1000 MICROSECOND");
  // clang-format on

  a.list_locks = expand("SELECT " + std::string(kMyColumns) + " FROM {{table}} AS l ORDER BY {{key}}");
  a.find_lock = expand("SELECT " + std::string(kMyColumns) + " FROM {{table}} AS l WHERE resource = $1" +
                       scope_condition(sh, 2) + " ORDER BY {{key}}");

  // No DELETE … RETURNING: read the row under a lock, then delete it in the same transaction.
  a.force_release_in_transaction = true;
  a.force_release_select = expand("SELECT " + std::string(kMyColumns) + " FROM {{table}} AS l WHERE resource = $1" +
                                  scope_condition(sh, 2) + " ORDER BY {{key}} FOR UPDATE");
  a.force_release = expand("DELETE FROM {{table}} WHERE resource = $1" + scope_condition(sh, 2));
  return a;
}

// SQLite: 'now' is fixed for the statement; times are stored as 'YYYY-MM-DD HH:MM:SS.SSS' UTC.
constexpr std::string_view kLiteColumns =
    "resource, owner_token, holder_host, holder_pid, holder_thread, {{count}}, {{fence}}, "
    "replace({{acquired}}, ' ', 'T') || 'Z', "
    "CAST(ROUND((julianday(expires_at) - julianday('now')) * 86400000) AS INTEGER), "
    "expires_at <= strftime('%Y-%m-%d %H:%M:%f', 'now'){{extra}}";

admin_sql sqlite(const std::string& table, const table_shape& sh) {
  admin_sql a;
  a.kind = dialect_kind::sqlite;
  const auto expand = [&](std::string_view text) { return expand_table_template(shaped(text, sh), a.kind, table); };

  // SQLite has one writer and no row locks, so one statement is atomic; it waits for another
  // writer up to the busy timeout. The cut-off is the same text expression in both places.
  constexpr std::string_view kCutoff = "strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ($2 / 1000.0) || ' seconds')";
  // clang-format off
  a.reap_batch = expand("DELETE FROM {{table}} WHERE ({{key}}) IN (SELECT {{key}} FROM {{table}} WHERE expires_at <= " +
                        std::string(kCutoff) + " ORDER BY expires_at LIMIT $1) AND expires_at <= " +
                        std::string(kCutoff) + " RETURNING 1");
  // clang-format on

  a.list_locks = expand("SELECT " + std::string(kLiteColumns) + " FROM {{table}} AS l ORDER BY {{key}}");
  a.find_lock = expand("SELECT " + std::string(kLiteColumns) + " FROM {{table}} AS l WHERE resource = $1" +
                       scope_condition(sh, 2) + " ORDER BY {{key}}");
  a.force_release = expand("DELETE FROM {{table}} WHERE resource = $1" + scope_condition(sh, 2) + " RETURNING " +
                           std::string(kLiteColumns));
  return a;
}

}  // namespace

std::shared_ptr<const admin_sql> make_admin_sql(dialect_kind kind, const std::string& table, lease_table which) {
  const auto& sh = which == lease_table::permits ? kPermitShape
                   : which == lease_table::queue ? kQueueShape
                                                 : kLockShape;
  const auto build = [&] {
    switch (kind) {
      case dialect_kind::postgresql: return postgresql(table, sh);
      case dialect_kind::mysql: return mysql(table, sh);
      case dialect_kind::sqlite: return sqlite(table, sh);
    }
    throw not_supported("unknown dialect");
  };
  admin_sql a = build();
  a.scope_params = sh.scope.empty() ? 0 : 2;
  return std::make_shared<const admin_sql>(std::move(a));
}

}  // namespace sqllock::detail
