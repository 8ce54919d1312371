#include "core/row_lock_core.hpp"

#include <algorithm>
#include <optional>

#include "common/lock_name.hpp"

namespace sqllock::detail {
namespace {

using steady = std::chrono::steady_clock;

// Bounds the lock waits of the statements that follow through the dialect's timeout setting
// (PostgreSQL lock_timeout for the transaction, MySQL innodb_lock_wait_timeout for the session),
// remembering the value it replaced so that restore() can put it back.
class lock_wait_bound {
 public:
  lock_wait_bound(connection& conn, const row_lock_sql& sql) : conn_(conn), sql_(sql) {}

  // Limits waits to `limit`, rounded up to the dialect's unit, at least its minimum and at most
  // its maximum (a far deadline, e.g. from hours::max(), is cut to what the server accepts).
  void set(steady::duration limit) {
    remember();
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(limit).count();
    const std::int64_t units =
        std::clamp<std::int64_t>(ms / sql_.timeout_unit_ms + (ms % sql_.timeout_unit_ms > 0 ? 1 : 0),
                                 sql_.timeout_min, sql_.timeout_max);
    const value params[] = {units};
    conn_.exec(sql_.timeout_set, params);
  }

  // The shortest wait the dialect can express, for statements without NOWAIT.
  void set_shortest() {
    remember();
    const value params[] = {sql_.timeout_shortest};
    conn_.exec(sql_.timeout_set, params);
  }

  // Puts the remembered setting back; nothing to do when none was changed.
  void restore() {
    if (!previous_) return;
    const value params[] = {*previous_};
    previous_.reset();
    conn_.exec(sql_.timeout_restore, params);
  }

  // For error paths: the error being handled is the one worth reporting.
  void restore_quietly() noexcept {
    try {
      if (!conn_.broken()) restore();
    } catch (...) {
    }
  }

  // Reads the setting to restore, once (a plain SELECT of a variable: no table, no snapshot).
  void remember() {
    if (previous_) return;
    const auto r = conn_.exec(sql_.timeout_get, {});
    previous_ = r.rows.empty() || r.rows[0].empty() ? std::string() : r.rows[0][0].value_or("");
    if (previous_->empty()) throw backend_error("the server did not report its lock wait timeout", "", 0);
  }

  // The transaction or savepoint the setting was made in was rolled back. A transaction-local
  // setting went with it; a session setting did not.
  void rolled_back() noexcept {
    if (sql_.timeout_is_transaction_local) previous_.reset();
  }

 private:
  connection& conn_;
  const row_lock_sql& sql_;
  std::optional<std::string> previous_;
};

// The wait actually left: an `until` whose deadline has passed becomes a NOWAIT attempt.
row_wait effective(const row_wait& wait) {
  if (wait.kind == row_wait_kind::until && wait.deadline <= steady::now()) return {row_wait_kind::nowait, {}};
  return wait;
}

bool is_lock_not_available(const row_lock_sql& sql, const backend_error& e) {
  return classify(sql.kind, e) == error_kind::lock_not_available;
}

// Makes sure the row of `name` exists. Returns false when the insert had to wait for a concurrent
// transaction longer than `wait` allows. Under row_wait_kind::until the bound is already set.
// Without `probe`, always runs the insert (MySQL in a caller's transaction, see row_lock_sql).
bool ensure_row(connection& conn, const row_lock_sql& sql, const std::string& name, const row_wait& wait,
                lock_wait_bound& bound, bool probe) {
  const value key[] = {name};
  if (probe && !conn.exec(sql.probe, key).rows.empty()) return true;
  // Missing, created after this transaction's snapshot (REPEATABLE READ), or not looked for. The
  // insert can wait: for another transaction inserting the same name, and on MySQL for one holding
  // the row. A NOWAIT attempt bounds it by the shortest timeout instead: INSERT has no NOWAIT.
  const bool bounded_here = wait.kind == row_wait_kind::nowait;
  if (bounded_here) bound.set_shortest();
  try {
    conn.exec(sql.ensure, key);
  } catch (const backend_error& e) {
    if (is_lock_not_available(sql, e)) return false;  // the caller rolls back and restores
    throw;
  }
  if (bounded_here) bound.restore();
  return true;
}

enum class lock_outcome { locked, busy, missing };

lock_outcome lock_row(connection& conn, const row_lock_sql& sql, const std::string& name, const row_wait& wait) {
  const value key[] = {name};
  try {
    const auto r = conn.exec(wait.kind == row_wait_kind::nowait ? sql.lock_nowait : sql.lock, key);
    return r.rows.empty() ? lock_outcome::missing : lock_outcome::locked;
  } catch (const backend_error& e) {
    if (is_lock_not_available(sql, e)) return lock_outcome::busy;
    throw;
  }
}

void exec_quietly(connection& conn, const std::string& statement) noexcept {
  try {
    if (!conn.broken()) conn.exec_direct(statement);
  } catch (...) {
  }
}

// Translates a server error raised while locking `name` into what the caller should do.
[[noreturn]] void rethrow_lock_error(const row_lock_sql& sql, const backend_error& e, const std::string& name,
                                     std::string_view rolled_back) {
  switch (classify(sql.kind, e)) {
    case error_kind::undefined_table:
      throw schema_error(std::string(e.what()) +
                         " (the row lock table is missing: run `sqllock migrate`; row locks need schema 2)");
    case error_kind::deadlock:
    case error_kind::serialization:
      throw deadlock_error(e, name, rolled_back);
    default:
      throw;
  }
}

}  // namespace

void check_row_lock_request(const row_lock_sql& sql, std::string_view name) {
  if (!sql.supported) {
    throw not_supported("row locks (SELECT … FOR UPDATE) need PostgreSQL or MySQL/MariaDB; " +
                        std::string(to_string(sql.kind)) +
                        " locks whole databases, not rows: use sqllock::table_lock instead "
                        "(check sqllock::supports_row_locks first)");
  }
  validate_lock_name(name);
}

backend_error deadlock_error(const backend_error& e, const std::string& name, std::string_view rolled_back) {
  return backend_error("row lock '" + name + "' could not be taken: the server chose this transaction as a " +
                           "deadlock or serialization victim and rolled back " + std::string(rolled_back) +
                           "; retry the transaction (" + e.what() + ")",
                       e.sqlstate(), e.vendor_code());
}

bool begin_row_locked(connection& conn, const dialect_sql& dialect, const row_lock_sql& sql,
                      const std::string& name, const row_wait& requested) {
  const row_wait wait = effective(requested);
  const bool timed = wait.kind == row_wait_kind::until;
  lock_wait_bound bound(conn, sql);
  // Someone deleting rows of the row table between our insert and our lock could make the lock
  // find nothing; a few tries cover that race, a persistent one is a misconfiguration.
  for (int attempt = 1;; ++attempt) {
    bool in_transaction = false;
    const auto roll_back = [&] {
      if (in_transaction) conn.exec_direct(dialect.rollback);
      in_transaction = false;
      bound.rolled_back();
    };
    try {
      if (timed && !sql.timeout_is_transaction_local) bound.set(wait.deadline - steady::now());
      if (sql.ensure_before_begin && !ensure_row(conn, sql, name, wait, bound, true)) {
        bound.restore();
        return false;
      }
      conn.exec_direct(dialect.begin);
      in_transaction = true;
      if (timed && sql.timeout_is_transaction_local) bound.set(wait.deadline - steady::now());
      const lock_outcome outcome = !sql.ensure_before_begin && !ensure_row(conn, sql, name, wait, bound, true)
                                       ? lock_outcome::busy
                                       : lock_row(conn, sql, name, wait);
      if (outcome == lock_outcome::locked) {
        bound.restore();  // the caller's statements run with the connection's own setting
        return true;
      }
      // MySQL rolls back only the refused statement: end the transaction ourselves.
      roll_back();
      bound.restore();
      if (outcome == lock_outcome::busy) return false;
      if (attempt >= 3) {
        throw backend_error("the row of row lock '" + name + "' disappears each time it is created: something "
                            "deletes rows of the row lock table, which must never happen while it is in use",
                            "", 0);
      }
    } catch (const backend_error& e) {
      if (in_transaction) exec_quietly(conn, dialect.rollback);
      bound.rolled_back();
      bound.restore_quietly();
      rethrow_lock_error(sql, e, name, "it (nothing was committed)");
    } catch (...) {
      if (in_transaction) exec_quietly(conn, dialect.rollback);
      bound.rolled_back();
      bound.restore_quietly();
      throw;
    }
  }
}

bool lock_in_transaction(connection& conn, const row_lock_sql& sql, const std::string& name,
                         const row_wait& requested) {
  const row_wait wait = effective(requested);
  lock_wait_bound bound(conn, sql);
  const bool use_savepoint = sql.errors_abort_transaction;
  bool in_savepoint = false;
  try {
    if (use_savepoint) {
      conn.exec_direct(sql.savepoint);
      in_savepoint = true;
    }
    if (wait.kind == row_wait_kind::until) bound.set(wait.deadline - steady::now());
    const lock_outcome outcome = !ensure_row(conn, sql, name, wait, bound, sql.probe_in_caller_transaction)
                                     ? lock_outcome::busy
                                     : lock_row(conn, sql, name, wait);
    if (outcome == lock_outcome::locked) {
      bound.restore();
      if (in_savepoint) conn.exec_direct(sql.release_savepoint);
      return true;
    }
    if (in_savepoint) {
      conn.exec_direct(sql.rollback_to_savepoint);
      bound.rolled_back();
      conn.exec_direct(sql.release_savepoint);
      in_savepoint = false;
    }
    bound.restore();
    if (outcome == lock_outcome::missing) {
      throw backend_error("the row of row lock '" + name + "' was deleted while it was being locked: something "
                          "deletes rows of the row lock table, which must never happen while it is in use; roll "
                          "back this transaction",
                          "", 0);
    }
    return false;
  } catch (const backend_error& e) {
    if (in_savepoint) {
      exec_quietly(conn, sql.rollback_to_savepoint);
      exec_quietly(conn, sql.release_savepoint);
      bound.rolled_back();
    }
    bound.restore_quietly();
    if (is_no_transaction_error(sql.kind, e)) {
      throw invalid_argument("row lock '" + name + "' must be taken inside an open transaction; the connection "
                             "is in autocommit mode, where FOR UPDATE would end at once (" + e.what() + ")");
    }
    rethrow_lock_error(sql, e, name,
                       use_savepoint ? "this attempt only (to a savepoint: your transaction is still usable)"
                                     : "your whole transaction");
  } catch (...) {
    if (in_savepoint) {
      exec_quietly(conn, sql.rollback_to_savepoint);
      exec_quietly(conn, sql.release_savepoint);
      bound.rolled_back();
    }
    bound.restore_quietly();
    throw;
  }
}

}  // namespace sqllock::detail
