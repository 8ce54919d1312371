#include "dialect/dialect.hpp"

#include <string_view>

namespace sqllock::detail {

std::shared_ptr<const dialect_sql> make_dialect_sql(dialect_kind kind, const std::string& table) {
  switch (kind) {
    case dialect_kind::postgresql: return std::make_shared<const dialect_sql>(make_postgresql_sql(table));
    case dialect_kind::mysql: return std::make_shared<const dialect_sql>(make_mysql_sql(table));
    case dialect_kind::sqlite: return std::make_shared<const dialect_sql>(make_sqlite_sql(table));
  }
  throw not_supported("unknown dialect");
}

std::span<const std::string_view> session_setup(dialect_kind kind) noexcept {
  static constexpr std::string_view mysql[] = {
      "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
      "NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'",
  };
  static constexpr std::string_view postgresql[] = {
      "SELECT set_config(name, '1000', false) FROM pg_settings WHERE name = 'client_connection_check_interval'",
  };
  if (kind == dialect_kind::mysql) return mysql;
  if (kind == dialect_kind::postgresql) return postgresql;
  return {};
}

statement_stopper cut_off_statement_stopper(dialect_kind kind) noexcept {
  if (kind == dialect_kind::mysql) return {"SELECT CONNECTION_ID()", "KILL QUERY $1"};
  return {};
}

error_kind classify(dialect_kind kind, const backend_error& e) {
  const std::string_view state = e.sqlstate();
  const std::string_view what = e.what();
  switch (kind) {
    case dialect_kind::postgresql:
      if (state == "42P01") return error_kind::undefined_table;
      if (state == "55P03") return error_kind::lock_not_available;
      if (state == "40P01") return error_kind::deadlock;
      if (state == "40001") return error_kind::serialization;
      if (state == "57014") return error_kind::query_canceled;
      if (state == "25P01") return error_kind::no_transaction;
      return error_kind::other;
    case dialect_kind::mysql:
      switch (e.vendor_code()) {
        case 1146: return error_kind::undefined_table;     // ER_NO_SUCH_TABLE
        case 1205:                                         // ER_LOCK_WAIT_TIMEOUT (also MariaDB NOWAIT)
        case 3572: return error_kind::lock_not_available;  // ER_LOCK_NOWAIT (MySQL 8)
        case 1213:                                         // ER_LOCK_DEADLOCK (Galera: also a certification conflict)
        case 3058: return error_kind::deadlock;            // ER_USER_LOCK_DEADLOCK (MySQL 8 GET_LOCK)
        default: return error_kind::other;
      }
    case dialect_kind::sqlite:
      if (what.find("no such table") != std::string_view::npos) return error_kind::undefined_table;
      if ((e.vendor_code() & 0xff) == 5 || (e.vendor_code() & 0xff) == 6 ||
          what.find("database is locked") != std::string_view::npos)
        return error_kind::busy;  // SQLITE_BUSY / SQLITE_LOCKED after the busy timeout
      return error_kind::other;
  }
  return error_kind::other;
}

}  // namespace sqllock::detail
