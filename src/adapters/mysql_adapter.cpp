// Glue for include/sqllock/adapters/mysql.hpp: wraps the application's session as a connection
// (not owned) and hands it to the core. No lock semantics here.
#include "sqllock/adapters/mysql.hpp"

#include "core/lease/lease_guard.hpp"
#include "core/session/row_lock_core.hpp"
#include "driver/mysql/cppconn.hpp"
#include "driver/mysql/mysql_connection.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

namespace {

constexpr std::string_view kWhat = "the application's Connector/C++ connection";

// Refuses a null connection or one in autocommit, where `what` (e.g. "FOR UPDATE") would end with
// its own statement; `call` names the caller in messages.
void require_transaction(sql::Connection* conn, const char* call, const char* needs, const char* what) {
  if (conn == nullptr) throw invalid_argument(std::string(call) + ": the sql::Connection is null");
  bool autocommit = true;
  try {
    autocommit = conn->getAutoCommit();
  } catch (const sql::SQLException& e) {
    throw connection_error(std::string(kWhat) + " is not usable: " + e.what());
  }
  if (autocommit) {
    throw invalid_argument(std::string(needs) +
                           " needs a transaction, but the sql::Connection has autocommit on, where " + what +
                           " ends with its own statement; call setAutoCommit(false) first");
  }
}

}  // namespace

bool mysql_lock_row(sql::Connection* conn, std::string_view name, row_wait_kind wait,
                    std::chrono::steady_clock::time_point deadline, std::string_view table, std::stop_token stop) {
  require_transaction(conn, "lock_row", "a row lock", "FOR UPDATE");
  mysql_connection wrapped(*conn, std::string(kWhat));
  // Connector/C++ 1.1 does not tell the server's session id without a query: the Galera verdict
  // is cached by the connection object alone (see refuse_on_galera in core/handle/galera_guard.hpp).
  return lock_row_in_caller_transaction(wrapped, dialect_kind::mysql, table, name, {wait, deadline, std::move(stop)},
                                        {conn, 0, kWhat});
}

}  // namespace sqllock::detail

namespace sqllock {

void guard(sql::Connection* conn, const lease_claim& claim) {
  detail::require_transaction(conn, "guard", "guard()", "the guard's row lock");
  detail::mysql_connection wrapped(*conn, std::string(detail::kWhat));
  detail::guard_in_caller_transaction(wrapped, dialect_kind::mysql, claim, {conn, 0, detail::kWhat});
}

}  // namespace sqllock
