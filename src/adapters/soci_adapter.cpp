// Glue for include/sqllock/adapters/soci.hpp: wraps the application's session as a connection
// (not owned) and hands it to the core. No lock semantics here.
#include "sqllock/adapters/soci.hpp"

#include <soci/mysql/soci-mysql.h>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include "core/lease/lease_guard.hpp"
#include "core/session/row_lock_core.hpp"
#include "driver/soci/soci_backend.hpp"
#include "driver/soci/soci_connection.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// Whether a MySQL session is inside a transaction, from the status the server sent with its last
// reply: a BEGIN / START TRANSACTION ran, or autocommit is off (the next statement starts one).
// PostgreSQL needs no such check: the core's SAVEPOINT fails outside a transaction.
SQLLOCK_SOCI_DOWNCAST bool mysql_in_transaction(soci::session& session) {
  const MYSQL* conn = static_cast<soci::mysql_session_backend*>(session.get_backend())->conn_;
  return conn != nullptr &&
         ((conn->server_status & SERVER_STATUS_IN_TRANS) != 0 || (conn->server_status & SERVER_STATUS_AUTOCOMMIT) == 0);
}

// The server's id of a MySQL session (mysql_thread_id: from the handshake, no round trip), which
// keys the Galera verdict cache together with the session object (core/handle/galera_guard.hpp).
SQLLOCK_SOCI_DOWNCAST std::uint64_t mysql_session_id(soci::session& session) {
  MYSQL* conn = static_cast<soci::mysql_session_backend*>(session.get_backend())->conn_;
  return conn != nullptr ? static_cast<std::uint64_t>(mysql_thread_id(conn)) : 0;
}

// Whether a PostgreSQL session is inside a transaction, as libpq last saw it (no round trip).
SQLLOCK_SOCI_DOWNCAST bool postgresql_in_transaction(soci::session& session) {
  PGconn* conn = static_cast<soci::postgresql_session_backend*>(session.get_backend())->conn_;
  const auto status = conn != nullptr ? PQtransactionStatus(conn) : PQTRANS_UNKNOWN;
  return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
}

// Whether an SQLite connection is inside a transaction (autocommit mode is off between BEGIN and
// its end).
SQLLOCK_SOCI_DOWNCAST bool sqlite_in_transaction(soci::session& session) {
  auto* db = static_cast<soci::sqlite3_session_backend*>(session.get_backend())->conn_;
  return db != nullptr && sqlite_api::sqlite3_get_autocommit(db) == 0;
}

constexpr std::string_view kWhat = "the application's SOCI session";

}  // namespace

bool soci_lock_row(soci::session& session, std::string_view name, row_wait_kind wait,
                   std::chrono::steady_clock::time_point deadline, std::string_view table, std::stop_token stop) {
  if (session.get_backend() == nullptr) throw invalid_argument("lock_row: the soci::session is not connected");
  const std::string backend = session.get_backend_name();
  std::unique_ptr<soci_backend> wrapped;
  dialect_kind dialect;
  caller_connection caller{&session, 0, kWhat};
  if (backend == "postgresql") {
    dialect = dialect_kind::postgresql;
    wrapped = borrow_soci_postgresql(session);
  } else if (backend == "mysql") {
    dialect = dialect_kind::mysql;
    if (!mysql_in_transaction(session)) {
      throw invalid_argument(
          "a row lock needs a transaction, but the soci::session is in autocommit mode, where "
          "FOR UPDATE ends with its own statement; open a soci::transaction first");
    }
    caller.server_session = mysql_session_id(session);
    wrapped = borrow_soci_mysql(session);
  } else {
    throw not_supported(
        "row locks (SELECT … FOR UPDATE) need PostgreSQL or MySQL/MariaDB; this soci::session "
        "uses the '" +
        backend + "' backend" +
        (backend == "sqlite3" ? " (SQLite locks whole databases, not rows: use table_lock)" : ""));
  }
  soci_connection conn(std::move(wrapped), std::string(kWhat));
  return lock_row_in_caller_transaction(conn, dialect, table, name, {wait, deadline, std::move(stop)}, caller);
}

}  // namespace sqllock::detail

namespace sqllock {

void guard(soci::session& session, const lease_claim& claim) {
  using namespace detail;
  if (session.get_backend() == nullptr) throw invalid_argument("guard: the soci::session is not connected");
  const std::string backend = session.get_backend_name();
  caller_connection caller{&session, 0, kWhat};
  std::unique_ptr<soci_backend> wrapped;
  dialect_kind dialect;
  bool in_transaction = false;
  if (backend == "postgresql") {
    dialect = dialect_kind::postgresql;
    in_transaction = postgresql_in_transaction(session);
    wrapped = borrow_soci_postgresql(session);
  } else if (backend == "mysql") {
    dialect = dialect_kind::mysql;
    in_transaction = mysql_in_transaction(session);
    caller.server_session = mysql_session_id(session);
    wrapped = borrow_soci_mysql(session);
  } else if (backend == "sqlite3") {
    dialect = dialect_kind::sqlite;
    in_transaction = sqlite_in_transaction(session);
    wrapped = borrow_soci_sqlite(session);
  } else {
    throw not_supported("guard() works on SOCI's postgresql, mysql and sqlite3 backends; this soci::session uses '" +
                        backend + "'");
  }
  if (!in_transaction) {
    throw invalid_argument(
        "guard() needs a transaction, but the soci::session has none open, where the guard's lock would end with "
        "its own statement; open a soci::transaction first");
  }
  soci_connection conn(std::move(wrapped), std::string(kWhat));
  guard_in_caller_transaction(conn, dialect, claim, caller);
}

}  // namespace sqllock
