// Transaction-scoped advisory locks run by sqllock: BEGIN, pg_advisory_xact_lock, the caller's
// function, COMMIT. The transaction's connection is a private pinned session, so the keepalive
// watches it while the function runs.
#include <exception>

#include "core/advisory_protocol.hpp"
#include "core/database_impl.hpp"
#include "dialect/dialect.hpp"
#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

using steady = std::chrono::steady_clock;

bool ended_by_timeout(const backend_error& e) {
  const error_kind kind = classify(dialect_kind::postgresql, e);
  return kind == error_kind::lock_not_available || kind == error_kind::query_canceled;
}

// Ends the transaction without keeping anything; a session that cannot is reset before reuse.
void roll_back(connection& c, const dialect_sql& sql, pinned_session& s) noexcept {
  try {
    c.exec_direct(sql.rollback);
  } catch (...) {
    s.dirty = true;
  }
}

}  // namespace

bool run_with_advisory_xact_lock(const database& db, const advisory_key& key,
                                 std::optional<std::chrono::milliseconds> timeout, const advisory_xact_options& options,
                                 const std::function<void(std::stop_token)>& body) {
  auto& impl = database_access::impl(db);
  const auto& sql = advisory_statements(impl.dialect());
  if (options.keepalive < std::chrono::milliseconds(10) || options.keepalive > std::chrono::hours(1))
    throw invalid_argument("advisory_xact_options::keepalive must be between 10 ms and 1 hour");
  const int kind = advisory_key_index(key);
  const int mode = static_cast<int>(options.mode == advisory_mode::shared ? lock_mode::shared : lock_mode::exclusive);
  const std::string what = "the transaction-level advisory lock " + key.to_string();
  const bool bounded = timeout.has_value();
  const bool no_wait = bounded && *timeout <= std::chrono::milliseconds::zero();
  const steady::time_point deadline = steady_deadline_after(bounded ? *timeout : std::chrono::milliseconds::zero());

  auto registry = session_registry::of(db);
  session_pin pin(*registry, registry->pin_private(options.keepalive));
  pinned_session& s = *pin;
  std::unique_lock use(s.use);
  connection& c = **s.conn;
  const auto params = advisory_lock_params(key, c);

  try {
    while (true) {
      c.exec_direct(impl.sql().begin);
      bool acquired = false;
      if (no_wait) {
        acquired = pg_true(own_session_or_refuse(c.exec(sql.try_xact_lock[kind][mode], params).rows.at(0).at(0), what));
      } else {
        // SET LOCAL: the setting ends with the transaction, whatever happens.
        c.exec(sql.set_local_lock_timeout,
               std::vector<value>{bounded ? lock_timeout_text(deadline - steady::now()) : "0"});
        try {
          own_session_or_refuse(c.exec(sql.xact_lock[kind][mode], params).rows.at(0).at(0), what);
          acquired = true;
        } catch (const backend_error& e) {
          // A lock granted in the instant the timeout fired belongs to this (now failed)
          // transaction and goes with the rollback below, so it is never leaked.
          if (!ended_by_timeout(e)) throw;
        }
      }
      if (acquired) break;
      roll_back(c, impl.sql(), s);
      // Only statement_timeout can end a wait without a deadline early: wait again.
      if (no_wait || (bounded && steady::now() >= deadline)) return false;
    }
  } catch (const connection_error&) {
    auto lost = registry->lose(s);
    use.unlock();
    run_callbacks(lost);
    throw;
  } catch (...) {
    roll_back(c, impl.sql(), s);
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
  if (!usable) {  // the session died while body ran
    if (failure) std::rethrow_exception(failure);
    throw lock_lost("the database session holding the transaction-level advisory lock " + key.to_string() +
                    " died while the function ran: the lock ended then, so the work may have overlapped "
                    "another holder's");
  }
  if (failure) {
    roll_back(c, impl.sql(), s);
    std::rethrow_exception(failure);
  }
  try {
    c.exec_direct(impl.sql().commit);
  } catch (const connection_error&) {
    auto lost = registry->lose(s);
    use.unlock();
    run_callbacks(lost);
    throw lock_lost("the database session holding the transaction-level advisory lock " + key.to_string() +
                    " broke before COMMIT: the lock may have ended while the function ran");
  } catch (...) {
    s.dirty = true;
    throw;
  }
  return true;
}

}  // namespace sqllock::detail

namespace sqllock::detail {

bool advisory_xact_lock_in_caller_transaction(connection& conn, dialect_kind dialect, const advisory_key& key,
                                              advisory_mode mode, std::optional<steady::time_point> deadline) {
  const auto& sql = advisory_statements(dialect);
  const auto params = advisory_lock_params(key, conn);
  const int kind = advisory_key_index(key);
  const int m = static_cast<int>(mode == advisory_mode::shared ? lock_mode::shared : lock_mode::exclusive);
  const std::string what = "the transaction-level advisory lock " + key.to_string();
  // Outside a transaction the lock would end with the statement: refuse rather than pretend.
  try {
    conn.exec_direct(sql.savepoint);
  } catch (const backend_error& e) {
    if (classify(dialect, e) == error_kind::no_transaction)
      throw invalid_argument("a transaction-level advisory lock needs an open transaction; begin one first");
    throw;
  }
  auto leave_savepoint = [&](bool roll_back) {
    if (roll_back) conn.exec_direct(sql.rollback_to_savepoint);
    conn.exec_direct(sql.release_savepoint);
  };
  if (!deadline) {
    try {
      own_session_or_refuse(conn.exec(sql.xact_lock[kind][m], params).rows.at(0).at(0), what);
    } catch (const error&) {
      leave_savepoint(true);  // the caller's transaction stays usable
      throw;
    }
    leave_savepoint(false);
    return true;
  }
  if (steady::now() >= *deadline) {
    const field acquired = conn.exec(sql.try_xact_lock[kind][m], params).rows.at(0).at(0);
    leave_savepoint(false);
    return pg_true(own_session_or_refuse(acquired, what));
  }
  const std::string previous = conn.exec(sql.current_lock_timeout, {}).rows.at(0).at(0).value_or("0");
  conn.exec(sql.set_local_lock_timeout, std::vector<value>{lock_timeout_text(*deadline - steady::now())});
  try {
    own_session_or_refuse(conn.exec(sql.xact_lock[kind][m], params).rows.at(0).at(0), what);
  } catch (const not_supported&) {
    leave_savepoint(true);
    throw;
  } catch (const backend_error& e) {
    // Rolling back to the savepoint also undoes SET LOCAL and releases a lock granted just as
    // the timeout fired (it belongs to the aborted subtransaction).
    leave_savepoint(true);
    if (ended_by_timeout(e)) return false;
    throw;
  }
  conn.exec(sql.set_local_lock_timeout, std::vector<value>{previous});
  leave_savepoint(false);
  return true;
}

}  // namespace sqllock::detail
