#include "support/lock_rows.hpp"

#include "support/fresh_database.hpp"

namespace sqllock::test {
namespace {

// " WITH RECURSIVE … seq(n)": the numbers 1 … at least `count` (a query filters `n <= count`) for
// MySQL/MariaDB. One digit column per decimal digit of count keeps the recursion depth at 10
// (MySQL 8 stops recursive CTEs at 1,000 levels by default) and generates no more numbers than
// needed.
std::string mysql_numbers(std::int64_t count) {
  std::string from = "d d0", number = "1 + d0.n";
  std::int64_t scale = 10;
  for (int i = 1; scale < count; ++i, scale *= 10) {
    from += ", d d" + std::to_string(i);
    number += " + " + std::to_string(scale) + " * d" + std::to_string(i) + ".n";
  }
  return " WITH RECURSIVE d(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < 9), seq(n) AS (SELECT " + number +
         " FROM " + from + ")";
}

}  // namespace

void insert_rows(const database& db, const row_spec& s) {
  const std::string t = db.table();
  const std::string cols =
      "(resource, owner_token, holder_session, count, fence, holder_host, holder_pid, holder_thread, lease_ms, "
      "auto_renew, acquired_at, renewed_at, expires_at)";
  std::vector<detail::value> params{s.prefix, std::int64_t{s.expires_in.count()}, s.count, s.session,
                                    std::int64_t{s.lease.count()}};
  switch (db.dialect()) {
    case dialect_kind::postgresql:
      sql(db,
          "INSERT INTO \"" + t + "\" " + cols +
              " SELECT CAST($1 AS text) || g, 'test-owner-' || g, CAST($4 AS text), 1, nextval('\"" + t +
              "_fence_seq\"'), 'test-host', 1, '1', CAST($5 AS bigint), true, now() - interval '1 hour', "
              "now() - interval '1 hour', clock_timestamp() + CAST($2 AS bigint) * interval '1 millisecond' "
              "FROM generate_series(1, CAST($3 AS bigint)) AS g",
          params);
      return;
    case dialect_kind::mysql: {
      // The BEFORE INSERT trigger draws each row's fence.
      sql(db,
          "INSERT INTO `" + t + "` " + cols + mysql_numbers(s.count) +
              " SELECT CONCAT($1, n), CONCAT('test-owner-', n), $4, 1, 0, 'test-host', 1, '1', $5, 1,"
              " UTC_TIMESTAMP(6) - INTERVAL 1 HOUR, UTC_TIMESTAMP(6) - INTERVAL 1 HOUR,"
              " UTC_TIMESTAMP(6) + INTERVAL $2 * 1000 MICROSECOND FROM seq WHERE n <= $3",
          params);
      return;
    }
    case dialect_kind::sqlite:
      // SQL text laid out by hand: clang-format 14 would break it around each `+`.
      // clang-format off
      sql(db,
          "INSERT INTO \"" + t + "\" " + cols +
              " WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < $3)"
              " SELECT $1 || n, 'test-owner-' || n, $4, 1, (SELECT value FROM \"" + t +
              "_fence\" WHERE id = 1) + n, 'test-host', 1, '1', $5, 1,"
              " strftime('%Y-%m-%d %H:%M:%f', 'now', '-3600 seconds'),"
              " strftime('%Y-%m-%d %H:%M:%f', 'now', '-3600 seconds'),"
              " strftime('%Y-%m-%d %H:%M:%f', 'now', ($2 / 1000.0) || ' seconds') FROM seq",
          params);
      // clang-format on
      return;
  }
}

void insert_queue_entries(const database& db, const queue_entry_spec& s) {
  const std::string t = db.table();
  const std::string cols =
      "(resource, kind, ticket, owner_token, holder_session, write_count, read_count, holder_host, holder_pid, "
      "holder_thread, lease_ms, auto_renew, enqueued_at, renewed_at, expires_at)";
  // Wrapped by hand: clang-format 14 would put each parameter on a line of its own.
  // clang-format off
  std::vector<detail::value> params{s.prefix, std::int64_t{s.expires_in.count()}, s.count, s.session, s.names,
                                    std::string(1, s.kind), std::int64_t{s.writers ? 1 : 0}};
  // clang-format on
  switch (db.dialect()) {
    case dialect_kind::postgresql:
      sql(db,
          "INSERT INTO \"" + t + "_queue\" " + cols +
              " SELECT CAST($1 AS text) || (g % CAST($5 AS bigint) + 1), CAST($6 AS text), nextval('\"" + t +
              "_fence_seq\"'), CAST($4 AS text) || '-' || g, CAST($4 AS text), CAST($7 AS bigint),"
              " 1 - CAST($7 AS bigint), 'test-host', 1, '1', 60000, true, now() - interval '1 hour',"
              " now() - interval '1 hour', clock_timestamp() + CAST($2 AS bigint) * interval '1 millisecond'"
              " FROM generate_series(1, CAST($3 AS bigint)) AS g",
          params);
      return;
    case dialect_kind::mysql: {
      // The BEFORE INSERT trigger draws each entry's ticket.
      sql(db,
          "INSERT INTO `" + t + "_queue` " + cols + mysql_numbers(s.count) +
              " SELECT CONCAT($1, MOD(n, $5) + 1), $6, 0, CONCAT($4, '-', n), $4, $7, 1 - $7, 'test-host', 1,"
              " '1', 60000, 1, UTC_TIMESTAMP(6) - INTERVAL 1 HOUR, UTC_TIMESTAMP(6) - INTERVAL 1 HOUR,"
              " UTC_TIMESTAMP(6) + INTERVAL $2 * 1000 MICROSECOND FROM seq WHERE n <= $3",
          params);
      return;
    }
    case dialect_kind::sqlite:
      // clang-format off
      sql(db,
          "INSERT INTO \"" + t + "_queue\" " + cols +
              " WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < $3)"
              " SELECT $1 || (n % $5 + 1), $6, (SELECT value FROM \"" + t + "_fence\" WHERE id = 1) + n,"
              " $4 || '-' || n, $4, $7, 1 - $7, 'test-host', 1, '1', 60000, 1,"
              " strftime('%Y-%m-%d %H:%M:%f', 'now', '-3600 seconds'),"
              " strftime('%Y-%m-%d %H:%M:%f', 'now', '-3600 seconds'),"
              " strftime('%Y-%m-%d %H:%M:%f', 'now', ($2 / 1000.0) || ' seconds') FROM seq",
          params);
      // clang-format on
      return;
  }
}

std::int64_t fence_source_value(const database& db) {
  const std::string t = db.table();
  const auto r = db.dialect() == dialect_kind::postgresql
                     // pg_sequence_last_value needs only the USAGE the runtime role has (reading
                     // the sequence as a table needs SELECT); NULL before the first nextval.
                     ? sql(db, "SELECT COALESCE(pg_sequence_last_value(CAST($1 AS regclass)), 0)",
                           {"\"" + t + "_fence_seq\""})
                     : sql(db, std::string("SELECT value FROM ") + (db.dialect() == dialect_kind::mysql ? "`" : "\"") +
                                   t + "_fence" + (db.dialect() == dialect_kind::mysql ? "`" : "\"") + " WHERE id = 1");
  return std::stoll(r.rows.at(0).at(0).value());
}

}  // namespace sqllock::test
