#include "core/session/row_lock_core.hpp"

#include <optional>

#include "common/lock_name.hpp"
#include "core/handle/error_translation.hpp"
#include "core/wait/statement_cancel.hpp"
#include "core/wait/wait_bounds.hpp"

namespace sqllock::detail {
namespace {

using steady = std::chrono::steady_clock;

// The wait actually left: an `until` whose deadline has passed becomes a NOWAIT attempt.
row_wait effective(const row_wait& wait) {
  if (wait.kind == row_wait_kind::until && wait.deadline <= steady::now()) return {row_wait_kind::nowait, {}};
  return wait;
}

bool is_lock_not_available(const row_lock_sql& sql, const backend_error& e) {
  return classify(sql.kind, e) == error_kind::lock_not_available;
}

// Runs `statement` (one that may wait for the row) so that a stop on wait.stop cancels it; true
// when it failed because of such a cancel (the wait ended as by a timeout), false when it ran.
// Throws what it throws otherwise.
template <class Statement>
bool cancelled_by_stop(connection& conn, const row_wait& wait, Statement statement) {
  if (wait.cancel_via == nullptr || wait.kind == row_wait_kind::nowait) {
    statement();
    return false;
  }
  bool cancel_sent = false;
  try {
    run_stoppable(*wait.cancel_via, conn, wait.stop, cancel_sent, statement);
    return false;
  } catch (const backend_error&) {
    if (cancel_sent) return true;  // PostgreSQL 57014, MySQL 1317: the statement alone was undone
    throw;
  }
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
    if (cancelled_by_stop(conn, wait, [&] { conn.exec(sql.ensure, key); })) return false;
  } catch (const backend_error& e) {
    if (is_lock_not_available(sql, e)) return false;  // the caller rolls back and restores
    throw;
  }
  if (bounded_here) bound.restore();
  return true;
}

enum class lock_outcome { locked, busy, missing };

// A row lock attempt's statements wait on the server: a blocking one for as long as it takes (no
// bound), a timed one until its deadline (bounded by it); a NOWAIT attempt keeps the usual bound.
void bound_row_wait(std::optional<server_wait_bounds>& bounds, const row_wait& wait) {
  if (wait.kind == row_wait_kind::block) bounds.emplace(std::nullopt);
  if (wait.kind == row_wait_kind::until) bounds.emplace(wait.deadline);
}

lock_outcome lock_row(connection& conn, const row_lock_sql& sql, const std::string& name, const row_wait& wait) {
  const value key[] = {name};
  try {
    lock_outcome outcome = lock_outcome::busy;
    const bool cancelled = cancelled_by_stop(conn, wait, [&] {
      const auto r = conn.exec(wait.kind == row_wait_kind::nowait ? sql.lock_nowait : sql.lock, key);
      outcome = r.rows.empty() ? lock_outcome::missing : lock_outcome::locked;
    });
    return cancelled ? lock_outcome::busy : outcome;
  } catch (const backend_error& e) {
    if (is_lock_not_available(sql, e)) return lock_outcome::busy;
    throw;
  }
}

// Translates a server error raised while locking `name` into what the caller should do.
[[noreturn]] void rethrow_lock_error(const row_lock_sql& sql, const backend_error& e, const std::string& name,
                                     std::string_view rolled_back) {
  const std::string subject = "row lock '" + name + "' could not be taken";
  rethrow_classified(sql.kind, e,
                     {.subject = subject,
                      .rolled_back = rolled_back,
                      .retry = "the transaction",
                      .table = "the row lock table",
                      .needs = "; row locks need schema 2"});
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

std::optional<transaction> begin_row_locked(connection& conn, const dialect_sql& dialect, const row_lock_sql& sql,
                                            const std::string& name, const row_wait& requested) {
  const row_wait wait = effective(requested);
  const bool timed = wait.kind == row_wait_kind::until;
  std::optional<server_wait_bounds> waits;
  bound_row_wait(waits, wait);
  lock_wait_bound bound(conn, sql.lock_wait);
  // Someone deleting rows of the row table between our insert and our lock could make the lock
  // find nothing; a few tries cover that race, a persistent one is a misconfiguration.
  for (int attempt = 1;; ++attempt) {
    if (attempt > 1 && wait.stop.stop_requested()) return std::nullopt;
    std::optional<transaction> tx;
    try {
      if (timed && !sql.lock_wait.transaction_local) bound.set(wait.deadline - steady::now());
      if (sql.ensure_before_begin && !ensure_row(conn, sql, name, wait, bound, true)) {
        bound.restore();
        return std::nullopt;
      }
      tx.emplace(conn, dialect);
      if (timed && sql.lock_wait.transaction_local) bound.set(wait.deadline - steady::now());
      const lock_outcome outcome = !sql.ensure_before_begin && !ensure_row(conn, sql, name, wait, bound, true)
                                       ? lock_outcome::busy
                                       : lock_row(conn, sql, name, wait);
      if (outcome == lock_outcome::locked) {
        bound.restore();  // the caller's statements run with the connection's own setting
        return tx;
      }
      // MySQL rolls back only the refused statement: end the transaction ourselves.
      tx->rollback();
      bound.rolled_back();
      bound.restore();
      if (outcome == lock_outcome::busy) return std::nullopt;
      if (attempt >= 3) {
        throw backend_error("the row of row lock '" + name +
                                "' disappears each time it is created: something "
                                "deletes rows of the row lock table, which must never happen while it is in use",
                            "", 0);
      }
    } catch (const backend_error& e) {
      tx.reset();
      bound.rolled_back();
      bound.restore_quietly();
      rethrow_lock_error(sql, e, name, "it (nothing was committed)");
    } catch (...) {
      tx.reset();
      bound.rolled_back();
      bound.restore_quietly();
      throw;
    }
  }
}

bool lock_in_transaction(connection& conn, const row_lock_sql& sql, const std::string& name,
                         const row_wait& requested) {
  const row_wait wait = effective(requested);
  std::optional<server_wait_bounds> waits;
  bound_row_wait(waits, wait);
  lock_wait_bound bound(conn, sql.lock_wait);
  const bool use_savepoint = sql.errors_abort_transaction;
  std::optional<savepoint> attempt;
  // An error path undoes the attempt: back to its savepoint (taking a transaction-local setting
  // with it), then the setting.
  const auto undo_quietly = [&] {
    if (attempt) {
      attempt->undo_quietly();
      bound.rolled_back();
    }
    bound.restore_quietly();
  };
  try {
    if (use_savepoint) attempt.emplace(conn, sql.savepoint);
    if (wait.kind == row_wait_kind::until) bound.set(wait.deadline - steady::now());
    const lock_outcome outcome = !ensure_row(conn, sql, name, wait, bound, sql.probe_in_caller_transaction)
                                     ? lock_outcome::busy
                                     : lock_row(conn, sql, name, wait);
    if (outcome == lock_outcome::locked) {
      bound.restore();
      if (attempt) attempt->keep();
      return true;
    }
    if (attempt) {
      attempt->undo();
      bound.rolled_back();
    }
    bound.restore();
    if (outcome == lock_outcome::missing) {
      throw backend_error("the row of row lock '" + name +
                              "' was deleted while it was being locked: something "
                              "deletes rows of the row lock table, which must never happen while it is in use; roll "
                              "back this transaction",
                          "", 0);
    }
    return false;
  } catch (const backend_error& e) {
    undo_quietly();
    if (is_no_transaction_error(sql.kind, e)) {
      throw invalid_argument("row lock '" + name +
                             "' must be taken inside an open transaction; the connection "
                             "is in autocommit mode, where FOR UPDATE would end at once (" +
                             e.what() + ")");
    }
    rethrow_lock_error(sql, e, name,
                       use_savepoint ? "this attempt only (to a savepoint: your transaction is still usable)"
                                     : "your whole transaction");
  } catch (...) {
    undo_quietly();
    throw;
  }
}

}  // namespace sqllock::detail
