// The SOCI driver's per-library part: one soci::session plus what SOCI leaves to the native
// client library (libpq, libmariadb, libsqlite3).
//
// SOCI prepares statements and binds parameters. Results are read from the native result
// (PGresult, MYSQL_RES, sqlite3_stmt) that SOCI's backend exposes, not through soci::row:
// soci::row maps each column to a C++ type first and loses data on the way (SQLite INTEGER
// columns become 32-bit ints, timestamps lose their fraction, PostgreSQL booleans turn into
// 1/0, MySQL NULL-typed columns are refused). Reading the native text keeps every value exactly as
// the other drivers return it. Statements without parameters (exec_direct) run natively too, so
// that SOCI's own ':name' parsing never touches DDL, comments or quoted text.
//
// Only the SOCI driver's .cpp files include this header.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <soci/soci.h>

#include "common/uri.hpp"
#include "driver/abandon.hpp"
#include "driver/connection.hpp"

// Marks the few functions that downcast SOCI's backend base classes to reach the native handles.
// UBSan's vptr check would need those classes' typeinfo, which SOCI's libraries do not export.
#define SQLLOCK_SOCI_DOWNCAST __attribute__((no_sanitize("vptr")))

namespace sqllock::detail {

// What a SOCI or native error means: the message, the SQLSTATE ("" when unknown), the vendor code
// (MySQL errno, SQLite extended result code, or 0), whether the session is gone and whether the
// server refused the statement for lack of a privilege.
struct soci_failure {
  std::string message;
  std::string sqlstate;
  long long vendor_code = 0;
  bool connection_lost = false;
  bool permission_denied = false;
  // The session works, but the connection's record of it no longer does (PostgreSQL: a statement
  // it prepared is missing on the server session): report the error, then never reuse it.
  bool discard = false;
};

// One prepared statement with the variables its parameters and columns are bound to. SOCI keeps
// pointers to these variables, so the vectors are sized once, before binding, and never resized.
struct soci_statement {
  explicit soci_statement(soci::session& session) : statement(session) {}

  soci::statement statement;
  // The C++ type each parameter ($1, $2, …) is bound as: 'i' (long long) or 's' (text). A NULL
  // fits either, so a statement is rebound only when an integer and a text trade places.
  std::string signature;
  // One slot per native placeholder (":p1", ":p2", … in order); a $N used twice has two slots.
  std::vector<long long> integers;
  std::vector<std::string> texts;
  std::vector<soci::indicator> indicators;
  // SQLite only: SOCI steps through rows only for statements with into() elements, so each
  // result column is bound to a string. The values themselves are read from the sqlite3_stmt.
  std::vector<std::string> column_sinks;
  std::vector<soci::indicator> column_indicators;
  // Whether the statement only reads (see statement_kind.hpp): its row count is not "affected".
  bool query = false;
};

class soci_backend {
 public:
  virtual ~soci_backend() {
    if (borrowed_) (void)session_.release();  // the application's session: never closed here
  }
  soci_backend(const soci_backend&) = delete;
  soci_backend& operator=(const soci_backend&) = delete;

  soci::session& session() noexcept { return *session_; }

  // Called between prepare() and define_and_bind() of a new statement, which SOCI prepared from
  // `sql`: binds what the backend needs to receive rows (SQLite: one string per result column).
  virtual void define_columns(soci_statement&, std::string_view /*sql*/) {}

  // False when text parameters cannot hold NUL bytes (libpq passes C strings).
  virtual bool text_may_contain_nul() const noexcept { return true; }

  // Executes a prepared, bound statement and collects its rows and affected-row count. Backends
  // that run natively (below) never get here.
  virtual result run(soci_statement&) { throw std::logic_error("soci_backend::run: this backend runs natively"); }

  // True when the backend runs parameterised statements with the native client library itself
  // (PostgreSQL: libpq, see driver/pg_statements.hpp), through run_native() instead of SOCI.
  virtual bool runs_natively() const noexcept { return false; }
  // Executes `sql` (with $N placeholders) with `params`; only called when runs_natively().
  // Throws soci::soci_error on failure, like run().
  virtual result run_native(std::string_view /*sql*/, std::span<const value> /*params*/) { return {}; }
  // Prepares `sql` on the server now, as run_native() would on first use (connection::prepare);
  // only called when runs_natively(). Throws soci::soci_error on failure.
  virtual void prepare_native(std::string_view /*sql*/, std::size_t /*param_count*/) {}

  // Executes `sql` as written with the native client library (no parameters, not prepared).
  virtual result run_direct(std::string_view sql) = 0;

  // What `e`, thrown by SOCI or by this backend, means. May inspect the native connection.
  virtual soci_failure classify(const soci::soci_error& e) = 0;

  // Whether the native client receives notifications (PostgreSQL's LISTEN/NOTIFY). When true,
  // listen() and await_notifications() work as notification_source's (connection.hpp) and throw
  // soci::soci_error on failure.
  virtual bool receives_notifications() const noexcept { return false; }
  virtual void listen(const std::string& /*channel*/) {}
  virtual std::vector<std::string> await_notifications(std::chrono::milliseconds /*timeout*/) { return {}; }

  // The native connection's socket, or -1 (SQLite has none); see connection::socket.
  virtual int socket() noexcept { return -1; }

  // Lets go of the session without closing it (see connection::abandon).
  void leak() noexcept { leak_on_purpose(session_); }

 protected:
  explicit soci_backend(std::unique_ptr<soci::session> session) : session_(std::move(session)) {}
  // Uses an application's session without owning it (the adapters).
  explicit soci_backend(soci::session& borrowed) : session_(&borrowed), borrowed_(true) {}

  std::unique_ptr<soci::session> session_;
  bool borrowed_ = false;
};

// One factory per SOCI backend. Each connects, prepares the session for sqllock (timeouts,
// SQL mode, journal mode, …) and throws soci::soci_error when that fails.
// PostgreSQL honours spec.prepare_statements (?prepare=off).
std::unique_ptr<soci_backend> open_soci_postgresql(const connection_spec& spec, std::chrono::milliseconds timeout);
std::unique_ptr<soci_backend> open_soci_mysql(const connection_spec& spec, std::chrono::milliseconds timeout);
std::unique_ptr<soci_backend> open_soci_sqlite(const connection_spec& spec);

// Backends over an application's open session, which they use but never close or reconfigure
// (the adapters in include/sqllock/adapters/soci.hpp). PostgreSQL runs statements unnamed there:
// nothing of sqllock's stays on the application's session (SQLite's prepared statements are
// finalized with the backend).
std::unique_ptr<soci_backend> borrow_soci_postgresql(soci::session& session);
std::unique_ptr<soci_backend> borrow_soci_mysql(soci::session& session);
std::unique_ptr<soci_backend> borrow_soci_sqlite(soci::session& session);

// A message without the trailing newlines, blanks and full stop that libpq and SOCI add (sqllock
// appends its own context after it).
inline std::string soci_trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '.')) text.pop_back();
  return text;
}

}  // namespace sqllock::detail
