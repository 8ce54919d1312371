// Transaction-scoped advisory locks run by sqllock: BEGIN, pg_advisory_xact_lock, the caller's
// function, COMMIT. The transaction's connection is a private pinned session, so the keepalive
// watches it while the function runs.
#include <algorithm>
#include <exception>
#include <optional>

#include "core/session/advisory_protocol.hpp"
#include "core/handle/database_impl.hpp"
#include "core/handle/error_translation.hpp"
#include "core/handle/transaction.hpp"
#include "core/wait/statement_cancel.hpp"
#include "core/wait/wait_bounds.hpp"
#include "dialect/dialect.hpp"
#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

using steady = std::chrono::steady_clock;

}  // namespace

bool run_with_advisory_xact_lock(const database& db, const advisory_key& key,
                                 std::optional<steady::time_point> deadline, std::stop_token stop,
                                 const advisory_xact_options& options,
                                 const std::function<void(std::stop_token)>& body) {
  auto& impl = database_access::impl(db);
  const auto& sql = advisory_statements(impl.dialect());
  validate_keepalive(options.keepalive, "advisory_xact_options");
  const int kind = advisory_key_index(key);
  const int mode = static_cast<int>(options.mode == advisory_mode::shared ? lock_mode::shared : lock_mode::exclusive);
  const std::string what = "the transaction-level advisory lock " + key.to_string();
  const std::string subject = what + " could not be taken";
  const failure_context context{
      .subject = subject, .rolled_back = "its transaction (the function did not run)", .retry = "the call"};
  const bool no_wait = (deadline && *deadline <= steady::now()) || stop.stop_requested();
  // Where no cancel reaches the server (statement_cancel.hpp), a wait that can be stopped waits
  // in slices of kStopSlice, each in a transaction of its own, and sees a stop between them.
  const bool sliced = stop.stop_possible() && !server_cancel_reaches(impl);

  auto registry = session_registry::of(db);
  session_pin pin(*registry, registry->pin_private(options.keepalive));
  pinned_session& s = *pin;
  std::unique_lock use(s.use);
  connection& c = **s.conn;
  const auto params = advisory_lock_params(key, c);

  std::optional<transaction> tx;
  // Ends the transaction without keeping anything; a session that cannot is reset before reuse.
  const auto end = [&] {
    if (!tx->end_quietly()) s.dirty = true;
  };
  try {
    registry->limit_server_wait(s);
    while (true) {
      tx.emplace(c, impl.sql());
      bool acquired = false;
      if (no_wait) {
        acquired = pg_true(own_session_or_refuse(c.exec(sql.try_xact_lock[kind][mode], params).rows.at(0).at(0), what));
      } else {
        // SET LOCAL: the setting ends with the transaction, whatever happens.
        lock_wait_bound bound(c, sql.xact_lock_wait, lock_wait_bound::undo_by::transaction);
        auto wait_until = deadline;
        if (sliced) wait_until = std::min(deadline.value_or(steady::time_point::max()), steady::now() + kStopSlice);
        if (wait_until)
          bound.set(*wait_until - steady::now());
        else
          bound.set_unlimited();
        bool cancel_sent = false;
        try {
          const server_wait_bounds waits(wait_until);
          // A stop cancels the waiting statement (core/wait/statement_cancel.hpp).
          run_stoppable(impl, c, stop, cancel_sent, [&] {
            own_session_or_refuse(c.exec(sql.xact_lock[kind][mode], params).rows.at(0).at(0), what);
          });
          acquired = true;
        } catch (const backend_error& e) {
          // A lock granted in the instant the timeout (or a stop's cancel) fired belongs to this
          // (now failed) transaction and goes with the rollback below, so it is never leaked.
          if (!(cancel_sent && e.sqlstate() == "57014") && !ended_by_timeout(impl.dialect(), e))
            rethrow_classified(impl.dialect(), e, context);
        }
      }
      if (acquired) break;
      end();
      // Only statement_timeout (or a slice) can end a wait without a deadline early: wait again.
      if (no_wait || (deadline && steady::now() >= *deadline) || stop.stop_requested()) return false;
    }
  } catch (const connection_error&) {
    if (tx) tx->forget();  // the session is lost, and its transaction with it
    auto lost = registry->lose(s);
    use.unlock();
    run_callbacks(lost);
    throw;
  } catch (...) {
    if (tx) end();
    throw;
  }

  // Held: let the keepalive watch the session while body runs.
  registry->add_holds(s, +1);
  const std::stop_token token = registry->view(s).stop;
  use.unlock();
  std::exception_ptr failure;
  try {
    body(token);
  } catch (...) {
    failure = std::current_exception();
  }
  // Not waiting on a lost session: a ping hung on its dead connection may hold s.use for minutes.
  const bool usable = registry->lock_use(s, use, std::nullopt) == use_wait::locked && s.conn;
  registry->add_holds(s, -1);
  if (!usable) {  // the session died while body ran, and its connection may be gone
    tx->forget();
    if (failure) std::rethrow_exception(failure);
    throw lock_lost("the database session holding the transaction-level advisory lock " + key.to_string() +
                    " died while the function ran: the lock ended then, so the work may have overlapped "
                    "another holder's");
  }
  if (failure) {
    end();
    std::rethrow_exception(failure);
  }
  try {
    tx->commit("the lock may have ended while the function ran");
  } catch (const connection_error&) {
    auto lost = registry->lose(s);
    use.unlock();
    run_callbacks(lost);
    throw lock_lost("the database session holding the transaction-level advisory lock " + key.to_string() +
                    " broke before COMMIT: the lock may have ended while the function ran");
  } catch (const backend_error& e) {
    s.dirty = true;
    const std::string commit_subject = "the COMMIT of " + what + " failed";
    rethrow_classified(impl.dialect(), e, {.subject = commit_subject, .rolled_back = "its transaction"});
  } catch (...) {
    s.dirty = true;
    throw;
  }
  return true;
}

}  // namespace sqllock::detail

namespace sqllock::detail {
namespace {

// One attempt of advisory_xact_lock_in_caller_transaction, waiting as `deadline` says.
bool caller_transaction_attempt(connection& conn, dialect_kind dialect, const advisory_key& key, advisory_mode mode,
                                std::optional<steady::time_point> deadline) {
  const auto& sql = advisory_statements(dialect);
  const auto params = advisory_lock_params(key, conn);
  const int kind = advisory_key_index(key);
  const int m = static_cast<int>(mode == advisory_mode::shared ? lock_mode::shared : lock_mode::exclusive);
  const std::string what = "the transaction-level advisory lock " + key.to_string();
  const std::string subject = what + " could not be taken";
  const failure_context context{
      .subject = subject,
      .rolled_back = "this attempt only (to a savepoint: your transaction is still usable, without the lock)",
      .retry = "the lock, or your whole transaction"};
  // Outside a transaction the lock would end with the statement: refuse rather than pretend.
  std::optional<savepoint> attempt;
  try {
    attempt.emplace(conn, sql.savepoint);
  } catch (const backend_error& e) {
    if (classify(dialect, e) == error_kind::no_transaction)
      throw invalid_argument("a transaction-level advisory lock needs an open transaction; begin one first");
    throw;
  }
  if (!deadline) {
    try {
      const server_wait_bounds waits(std::nullopt);
      own_session_or_refuse(conn.exec(sql.xact_lock[kind][m], params).rows.at(0).at(0), what);
    } catch (const backend_error& e) {
      attempt->undo();  // the caller's transaction stays usable
      rethrow_classified(dialect, e, context);
    } catch (const error&) {
      attempt->undo();
      throw;
    }
    attempt->keep();
    return true;
  }
  if (steady::now() >= *deadline) {
    const field acquired = conn.exec(sql.try_xact_lock[kind][m], params).rows.at(0).at(0);
    attempt->keep();
    return pg_true(own_session_or_refuse(acquired, what));
  }
  lock_wait_bound bound(conn, sql.xact_lock_wait);
  bound.set(*deadline - steady::now());
  try {
    const server_wait_bounds waits(deadline);
    own_session_or_refuse(conn.exec(sql.xact_lock[kind][m], params).rows.at(0).at(0), what);
  } catch (const not_supported&) {
    attempt->undo();
    throw;
  } catch (const backend_error& e) {
    // Rolling back to the savepoint also undoes SET LOCAL and releases a lock granted just as
    // the timeout fired (it belongs to the aborted subtransaction).
    attempt->undo();
    bound.rolled_back();
    if (ended_by_timeout(dialect, e)) return false;
    rethrow_classified(dialect, e, context);
  }
  bound.restore();
  attempt->keep();
  return true;
}

}  // namespace

bool advisory_xact_lock_in_caller_transaction(connection& conn, dialect_kind dialect, const advisory_key& key,
                                              advisory_mode mode, std::optional<steady::time_point> deadline,
                                              std::stop_token stop) {
  if (stop.stop_requested()) deadline = steady::time_point::min();
  const bool waits = !deadline || *deadline > steady::now();
  if (!waits || !stop.stop_possible()) return caller_transaction_attempt(conn, dialect, key, mode, deadline);
  return wait_in_stop_slices(stop, deadline.value_or(steady::time_point::max()), [&](steady::time_point slice) {
    return caller_transaction_attempt(conn, dialect, key, mode, slice);
  });
}

}  // namespace sqllock::detail
