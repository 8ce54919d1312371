#include "dialect/multi_lock_sql.hpp"

#include <map>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "common/sql_text.hpp"
#include "dialect/dialect.hpp"
#include "dialect/postgresql_keys.hpp"

namespace sqllock::detail {
namespace {

// A multi_lock row is granted or refused by exactly the rules of the single acquire: re-entry,
// take-over of an expired row, which columns change. So the conflict clause is not written again
// here but taken from the dialect's own acquire statement (dialect_sql::acquire), from `from` up
// to `to` (the end when empty): one text, one set of rules. A dialect file that no longer has the
// marker fails here, when the statements are first built, and in every multi_lock test.
std::string conflict_clause(const std::string& single, std::string_view from, std::string_view to) {
  const auto begin = single.find(from);
  const auto end = to.empty() ? std::string::npos : single.find(to, begin);
  if (begin == std::string::npos || (!to.empty() && end == std::string::npos))
    throw std::logic_error("multi_lock_sql: the single acquire statement has no '" + std::string(from) + "' clause");
  return single.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// "<before>$<first><after>, <before>$<first+1><after>, …" for `count` parameters.
std::string parameter_list(std::size_t first, std::size_t count, std::string_view before = "",
                           std::string_view after = "") {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) out += ", ";
    out.append(before).append("$").append(std::to_string(first + i)).append(after);
  }
  return out;
}

// The first parameter number of the names in `acquire` ($1 … $7 are the common values).
constexpr std::size_t kFirstName = 8;

// PostgreSQL. The single acquire's ordering rule, for several names: every name's
// pg_advisory_xact_lock (the same key and seed as the single acquire, so a table_lock and a
// multi_lock of one name queue on one key) is taken before any fence is drawn or the clock read,
// so draw-to-commit of each name never interleaves with another grant of it (fence order = commit
// order). The locks are taken in the order of the VALUES list — the names sorted by bytes — so
// any two attempts take their common keys in one order and cannot deadlock on them (a 64-bit
// hash collision could order two keys against a third; PostgreSQL's deadlock detector then
// picks a victim, which the core counts as a refusal). The CTE `c` is MATERIALIZED: evaluated
// once, so one clock reading and one round of locks serve every row.
//
// The guard (NOT EXISTS a live row of another owner among the names) is uncorrelated, so it runs
// once, as a one-time filter before the locks: a busy attempt takes no advisory lock and touches
// no row (a failed ON CONFLICT … WHERE would still lock the row it refused until rollback). It
// reads the statement's snapshot, so a name taken meanwhile is still refused — by the conflict
// clause, which reads the newest row version; the core then rolls the partial result back.
multi_lock_sql postgresql(const std::string& table, std::size_t n) {
  const auto single = make_postgresql_sql(table);
  multi_lock_sql s;
  s.kind = dialect_kind::postgresql;
  s.names = n;
  s.in_transaction = true;
  // SQL text laid out by hand: clang-format 14 would break it around each `+`.
  // clang-format off
  s.acquire = expand_table_template(
                  "WITH n(resource) AS (VALUES " + parameter_list(kFirstName, n, "(CAST(", " AS text))") + "),\n"
                  "c AS MATERIALIZED (\n"
                  "  SELECT clock_timestamp() AS now\n"
                  "  FROM (SELECT count(pg_advisory_xact_lock(" + pg_acquire_key("n.resource") + ")) AS locked\n"
                  "        FROM n OFFSET 0) AS g\n"
                  "  WHERE NOT EXISTS (SELECT 1 FROM {{table}} AS o WHERE o.resource IN (SELECT resource FROM n)\n"
                  "                    AND o.owner_token <> CAST($1 AS text) AND o.expires_at > clock_timestamp()))\n"
                  "INSERT INTO {{table}} AS l (resource, owner_token, holder_session, count, fence, holder_host,\n"
                  "    holder_pid, holder_thread, lease_ms, auto_renew, acquired_at, renewed_at, expires_at)\n"
                  "SELECT n.resource, CAST($1 AS text), CAST($2 AS text), 1, nextval('{{table_fence_seq}}'),\n"
                  "    CAST($3 AS text), CAST($4 AS bigint), CAST($5 AS text), CAST($6 AS bigint),\n"
                  "    CAST($7 AS integer) <> 0,\n"
                  "    c.now, c.now, c.now + CAST($6 AS bigint) * interval '1 millisecond'\n"
                  "FROM c CROSS JOIN n\n",
                  s.kind, table) +
              conflict_clause(single.acquire, "ON CONFLICT", "RETURNING") + "RETURNING resource, count, fence";
  const std::string names = parameter_list(2, n, "CAST(", " AS text)");
  s.lease_remaining = expand_table_template(
      "SELECT GREATEST(0, CAST(EXTRACT(EPOCH FROM MIN(expires_at - t.now)) * 1000 AS bigint)) "
      "FROM {{table}}, (SELECT clock_timestamp() AS now) AS t "
      "WHERE resource IN (" + names + ") AND owner_token <> CAST($1 AS text) AND expires_at > t.now",
      s.kind, table);
  // clang-format on
  return s;
}

// MySQL/MariaDB. The single acquire's rows, one per name in sorted order, so that InnoDB locks
// them in that order; every row runs the BEFORE INSERT fence trigger, whose counter row stays
// locked until COMMIT (the read-back and COMMIT round trips: see docs/design.md, T8). The affected
// count cannot say which rows were granted, hence the read-back of the rows the owner now holds.
// Every statement is a point write or read by primary key: no range is read, so the server's
// default isolation level takes no gap lock here that READ COMMITTED would avoid.
multi_lock_sql mysql(const std::string& table, std::size_t n) {
  const auto single = make_mysql_sql(table);
  multi_lock_sql s;
  s.kind = dialect_kind::mysql;
  s.names = n;
  s.in_transaction = true;
  s.reads_back = true;
  std::string rows;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) rows += ",\n";
    rows += "($" + std::to_string(kFirstName + i) +
            ", $1, $2, 1, 0, $3, $4, $5, $6, $7, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), "
            "UTC_TIMESTAMP(6) + INTERVAL $6 * 1000 MICROSECOND)";
  }
  // clang-format off
  s.acquire = expand_table_template(
                  "INSERT INTO {{table}} (resource, owner_token, holder_session, count, fence, holder_host,\n"
                  "    holder_pid, holder_thread, lease_ms, auto_renew, acquired_at, renewed_at, expires_at)\n"
                  "VALUES " + rows + "\n",
                  s.kind, table) +
              conflict_clause(single.acquire, "ON DUPLICATE KEY UPDATE", "");
  const std::string names = parameter_list(2, n);
  s.readback = expand_table_template(
      "SELECT resource, count, fence FROM {{table}} WHERE owner_token = $1 AND resource IN (" + names + ")", s.kind,
      table);
  s.lease_remaining = expand_table_template(
      "SELECT GREATEST(0, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(expires_at)) DIV 1000) "
      "FROM {{table}} WHERE resource IN (" + names + ") AND owner_token <> $1 AND expires_at > UTC_TIMESTAMP(6)",
      s.kind, table);
  // clang-format on
  return s;
}

// SQLite. One statement: the single writer runs the guard and every upsert without anyone in
// between, so the guard decides for all names at once and the statement grants all or none. The
// SELECT reads the lock table, so SQLite computes its rows before inserting any: each row draws
// high-water + its position, distinct and above every fence issued; the table's triggers store
// the highest back. (The WHERE also resolves SQLite's INSERT … SELECT … ON CONFLICT parsing
// ambiguity.)
multi_lock_sql sqlite(const std::string& table, std::size_t n) {
  const auto single = make_sqlite_sql(table);
  multi_lock_sql s;
  s.kind = dialect_kind::sqlite;
  s.names = n;
  std::string values;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) values += ", ";
    values += "($" + std::to_string(kFirstName + i) + ", " + std::to_string(i + 1) + ")";
  }
  // clang-format off
  s.acquire = expand_table_template(
                  "WITH n(resource, ord) AS (VALUES " + values + ")\n"
                  "INSERT INTO {{table}} (resource, owner_token, holder_session, count, fence, holder_host,\n"
                  "    holder_pid, holder_thread, lease_ms, auto_renew, acquired_at, renewed_at, expires_at)\n"
                  "SELECT n.resource, $1, $2, 1, (SELECT value FROM {{table_fence}} WHERE id = 1) + n.ord,\n"
                  "    $3, $4, $5, $6, $7,\n"
                  "    strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now'),\n"
                  "    strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || ($6 / 1000.0) || ' seconds')\n"
                  "FROM n\n"
                  "WHERE NOT EXISTS (SELECT 1 FROM {{table}} AS o WHERE o.resource IN (SELECT resource FROM n)\n"
                  "                  AND o.owner_token <> $1 AND o.expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now'))\n"
                  "ORDER BY n.ord\n",
                  s.kind, table) +
              conflict_clause(single.acquire, "ON CONFLICT", "RETURNING") + "RETURNING resource, count, fence";
  const std::string names = parameter_list(2, n);
  s.lease_remaining = expand_table_template(
      "SELECT MAX(0, CAST(ROUND((julianday(MIN(expires_at)) - julianday('now')) * 86400000) AS INTEGER)) "
      "FROM {{table}} WHERE resource IN (" + names + ") AND owner_token <> $1 "
      "AND expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now')",
      s.kind, table);
  // clang-format on
  return s;
}

}  // namespace

std::shared_ptr<const multi_lock_sql> multi_lock_statements(dialect_kind kind, const std::string& table,
                                                            std::size_t names) {
  static std::mutex mu;
  static std::map<std::tuple<dialect_kind, std::string, std::size_t>, std::shared_ptr<const multi_lock_sql>> cache;
  std::lock_guard lock(mu);
  auto& slot = cache[{kind, table, names}];
  if (!slot) {
    switch (kind) {
      case dialect_kind::postgresql: slot = std::make_shared<const multi_lock_sql>(postgresql(table, names)); break;
      case dialect_kind::mysql: slot = std::make_shared<const multi_lock_sql>(mysql(table, names)); break;
      case dialect_kind::sqlite: slot = std::make_shared<const multi_lock_sql>(sqlite(table, names)); break;
    }
  }
  if (!slot) throw not_supported("unknown dialect");
  return slot;
}

}  // namespace sqllock::detail
