// sqllock::with_row_lock and friends: sqllock's own transaction on a pooled connection, held for as
// long as the caller's function runs. The locking itself is in row_lock_core.
#include "sqllock/row_lock.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/handle/database_impl.hpp"
#include "core/handle/error_translation.hpp"
#include "core/handle/galera_guard.hpp"
#include "core/session/row_lock_core.hpp"
#include "core/wait/statement_cancel.hpp"
#include "core/wait/wait_bounds.hpp"
#include "common/sql_text.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {

struct row_lock_tx_access {
  static row_lock_tx make(connection& conn, std::string name, const row_lock_sql& sql) {
    return row_lock_tx(conn, std::move(name), sql.kind, sql.errors_abort_transaction);
  }
  static const std::string& failure(const row_lock_tx& tx) noexcept { return tx.failure_; }
  // Throws the failure the transaction recorded, with `what` as its message.
  [[noreturn]] static void throw_failure(const row_lock_tx& tx, const std::string& what) {
    throw_server_error(tx.dialect_, what, tx.failure_state_, tx.failure_code_);
  }
};

namespace {

// The names this thread holds through with_row_lock, per handle. A second with_row_lock on one of
// them would take another connection and wait for the first forever: no server can see that
// both transactions belong to one thread.
struct held_by_thread {
  const database_impl* handle;
  std::string name;
};
thread_local std::vector<held_by_thread> t_held;

class reentry_guard {
 public:
  reentry_guard(const database_impl* handle, const std::string& name) {
    for (const auto& h : t_held) {
      if (h.handle == handle && h.name == name) {
        throw invalid_argument("row lock '" + name +
                               "' is already held by this thread (with_row_lock is not "
                               "re-entrant: the inner call would wait for the outer one forever); do the work "
                               "inside the outer call");
      }
    }
    t_held.push_back({handle, name});
  }
  ~reentry_guard() { t_held.pop_back(); }
  reentry_guard(const reentry_guard&) = delete;
  reentry_guard& operator=(const reentry_guard&) = delete;
};

// Whether a wait that a stop can end must run in slices: it waits, a stop can come, and no cancel
// reaches the server.
bool waits_in_slices(const row_wait& wait, bool cancel_reaches) {
  return wait.kind != row_wait_kind::nowait && wait.stop.stop_possible() && !wait.stop.stop_requested() &&
         !cancel_reaches;
}

// Runs `attempt(wait)` — one wait for the row that returns something true when it locked it —
// so that a stop on wait.stop ends it: a stop requested before the call leaves one attempt that
// does not wait; where a cancel reaches the server (`cancel_reaches`, wait.cancel_via set) the
// attempt waits as long as `wait` says and the stop cancels its statement, and elsewhere the wait
// runs as bounded attempts that see a stop between them (wait_in_stop_slices).
template <class Attempt>
auto stoppable_row_wait(row_wait wait, bool cancel_reaches, Attempt&& attempt) {
  if (wait.stop.stop_requested()) wait = {row_wait_kind::nowait, {}};
  if (!waits_in_slices(wait, cancel_reaches)) return attempt(wait);
  const auto until = wait.kind == row_wait_kind::until ? wait.deadline : std::chrono::steady_clock::time_point::max();
  return wait_in_stop_slices(wait.stop, until, [&](std::chrono::steady_clock::time_point slice) {
    return attempt(row_wait{row_wait_kind::until, slice});
  });
}

}  // namespace

bool run_row_locked(const database& db, std::string_view name, row_wait_kind wait,
                    std::chrono::steady_clock::time_point deadline, std::stop_token stop,
                    const std::function<void(row_lock_tx&)>& body) {
  auto& impl = database_access::impl(db);
  const auto sql = row_lock_statements(impl.dialect(), impl.options().table);
  check_row_lock_request(*sql, name);
  const std::string resource(name);
  reentry_guard guard(&impl, resource);

  auto conn = impl.borrow();  // pinned until the transaction ends
  // FOR UPDATE is node-local on Galera: refused on a multi-node cluster unless the URI says every
  // client uses one node. Asked on the handle's first named or row lock only.
  refuse_on_galera(impl, *conn, node_local_lock::for_update, resource);
  // Sliced where no cancel reaches the server: each slice in a transaction of its own.
  auto tx = stoppable_row_wait(
      {wait, deadline, std::move(stop), &impl}, server_cancel_reaches(impl),
      [&](const row_wait& w) { return begin_row_locked(*conn, impl.sql(), *sql, resource, w); });
  if (!tx) return false;
  row_lock_tx handle = row_lock_tx_access::make(*conn, resource, *sql);
  body(handle);  // if it throws, the transaction rolls back as it is destroyed
  if (conn->broken()) {
    throw connection_error("row lock '" + resource + "': the connection broke while the function ran (" +
                           row_lock_tx_access::failure(handle) +
                           "); the transaction was lost and nothing was committed");
  }
  if (const auto& failure = row_lock_tx_access::failure(handle); !failure.empty()) {
    tx->end_quietly();
    row_lock_tx_access::throw_failure(
        handle, "row lock '" + resource + "': a statement of the transaction failed (" + failure +
                    "), so it cannot commit; it was rolled back and nothing was committed; retry the whole "
                    "with_row_lock call if the failure was a deadlock or serialization failure");
  }
  try {
    tx->commit("the connection broke during the COMMIT of row lock '" + resource +
               "': whether the function's writes were committed is unknown; the lock itself is gone");
  } catch (const backend_error& e) {
    const std::string subject = "row lock '" + resource + "': the COMMIT failed";
    rethrow_classified(sql->kind, e,
                       {.subject = subject, .rolled_back = "the transaction", .retry = "the whole with_row_lock call"});
  }
  return true;
}

bool lock_row_in_caller_transaction(connection& conn, dialect_kind dialect, std::string_view table,
                                    std::string_view name, const row_wait& wait, const caller_connection& caller) {
  validate_table_name(table);
  const auto sql = row_lock_statements(dialect, std::string(table));
  check_row_lock_request(*sql, name);
  // As in run_row_locked, but without a handle: verdicts are cached per application connection.
  // The SHOW statements read no table, so they fix no REPEATABLE READ snapshot before the lock.
  refuse_on_galera(conn, dialect, caller, name);
  const std::string resource(name);
  // No handle to cancel from: a wait that can be stopped runs in slices, each in a savepoint (or,
  // on MySQL, a statement) of its own — unless a timed-out slice would roll back the caller's
  // whole transaction, and with it the writes it made before the call.
  if (waits_in_slices(wait, false) && !sql->timeout_ends_transaction.empty() &&
      conn.exec(sql->timeout_ends_transaction, {}).rows.at(0).at(0) == "1") {
    throw not_supported(
        "a row lock wait that a stop can end, in your own transaction, waits in bounded attempts, and this "
        "server (innodb_rollback_on_timeout = ON) rolls back the whole transaction when one times out; "
        "call lock_row without a stop token, or take the lock in a transaction of its own");
  }
  return stoppable_row_wait(wait, false,
                            [&](const row_wait& w) { return lock_in_transaction(conn, *sql, resource, w); });
}

}  // namespace detail

sql_result row_lock_tx::exec(std::string_view sql, std::initializer_list<sql_value> params) {
  return exec(sql, std::span<const sql_value>(params.begin(), params.size()));
}

sql_result row_lock_tx::exec(std::string_view sql, std::span<const sql_value> params) {
  if (!failure_.empty()) {
    detail::row_lock_tx_access::throw_failure(*this, "row lock '" + name_ + "': the transaction already failed (" +
                                                         failure_ + "); throw or return to roll it back");
  }
  try {
    // sql_value is the seam's value type. Statements without parameters are not prepared, so
    // one-off statements do not fill the connection's statement cache. They are the application's
    // own: no statement bound of sqllock's applies to them.
    const detail::unbounded_statements_scope applications_own;
    detail::result r = params.empty() ? conn_->exec_direct(sql) : conn_->exec(sql, params);
    return sql_result{std::move(r.rows), r.affected};
  } catch (const backend_error& e) {
    // PostgreSQL aborts the transaction on any error; a deadlock victim is rolled back anywhere.
    const bool rolled_back = detail::is_transaction_rollback(dialect_, e);
    if (errors_abort_ || rolled_back) {
      failure_ = e.what();
      failure_state_ = e.sqlstate();
      failure_code_ = e.vendor_code();
    }
    const std::string subject = "row lock '" + name_ + "': a statement of its transaction failed";
    detail::throw_if_rolled_back(dialect_, e,
                                 {.subject = subject,
                                  .rolled_back = "the whole transaction (nothing was committed)",
                                  .retry = "the whole with_row_lock call"});
    throw;
  } catch (const connection_error& e) {
    failure_ = e.what();
    throw;
  }
}

void set_caller_row_locks_galera_pinned(bool pinned) noexcept { detail::set_caller_galera_pinned(pinned); }

bool supports_row_locks(const database& db) noexcept {
  try {
    const auto& impl = detail::database_access::impl(db);
    return detail::row_lock_statements(impl.dialect(), impl.options().table)->supported;
  } catch (...) {
    return false;
  }
}

}  // namespace sqllock
