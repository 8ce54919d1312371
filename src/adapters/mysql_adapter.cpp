// Glue for include/sqllock/adapters/mysql.hpp: wraps the application's session as a connection
// (not owned) and hands it to the core. No lock semantics here.
#include "sqllock/adapters/mysql.hpp"

#include "core/session/row_lock_core.hpp"
#include "driver/mysql/cppconn.hpp"
#include "driver/mysql/mysql_connection.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

bool mysql_lock_row(sql::Connection* conn, std::string_view name, row_wait_kind wait,
                    std::chrono::steady_clock::time_point deadline, std::string_view table, std::stop_token stop) {
  if (conn == nullptr) throw invalid_argument("lock_row: the sql::Connection is null");
  bool autocommit = true;
  try {
    autocommit = conn->getAutoCommit();
  } catch (const sql::SQLException& e) {
    throw connection_error(std::string("the application's Connector/C++ connection is not usable: ") + e.what());
  }
  if (autocommit) {
    throw invalid_argument(
        "a row lock needs a transaction, but the sql::Connection has autocommit on, where "
        "FOR UPDATE ends with its own statement; call setAutoCommit(false) first");
  }
  constexpr std::string_view kWhat = "the application's Connector/C++ connection";
  mysql_connection wrapped(*conn, std::string(kWhat));
  // Connector/C++ 1.1 does not tell the server's session id without a query: the Galera verdict
  // is cached by the connection object alone (see refuse_on_galera in core/handle/galera_guard.hpp).
  return lock_row_in_caller_transaction(wrapped, dialect_kind::mysql, table, name, {wait, deadline, std::move(stop)},
                                        {conn, 0, kWhat});
}

}  // namespace sqllock::detail
