#include "core/session/advisory_protocol.hpp"

#include <atomic>

#include "common/identity.hpp"
#include "core/handle/error_translation.hpp"
#include "core/handle/transaction.hpp"
#include "core/wait/statement_cancel.hpp"
#include "core/wait/wait_bounds.hpp"
#include "dialect/dialect.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

using steady = std::chrono::steady_clock;

std::atomic<std::uint64_t> timeout_grants{0};

}  // namespace

std::vector<value> advisory_key_params(const advisory_key& key) {
  if (key.is_pair()) return {std::int64_t{key.first()}, std::int64_t{key.second()}};
  return {key.value()};
}

std::vector<value> advisory_lock_params(const advisory_key& key, connection& conn) {
  if (conn.session_tag.empty()) conn.session_tag = random_token();
  auto params = advisory_key_params(key);
  params.emplace_back(conn.session_tag);
  return params;
}

const field& own_session_or_refuse(const field& f, const std::string& what) {
  if (f) return f;
  throw not_supported(
      what +
      " refused: the statement reached a database server session where another connection holds this "
      "key with a session-level advisory lock, which the server would have granted again as a re-entry. So "
      "the connection does not keep a server session of its own — it goes through a transaction-mode pooler "
      "such as PgBouncer (pool_mode = transaction), where a session-level lock stays with a server session "
      "that other clients share. Connect to PostgreSQL directly or through a session-mode pool for "
      "advisory_lock; with_advisory_xact_lock and table_lock work behind such a pooler (see \"Running on HA "
      "setups and poolers\" in docs/operations.md)");
}

int advisory_key_index(const advisory_key& key) noexcept {
  return static_cast<int>(key.is_pair() ? advisory_key_kind::pair : advisory_key_kind::single);
}

bool pg_true(const field& f) noexcept { return f && (*f == "t" || *f == "true" || *f == "1"); }

std::uint64_t advisory_timeout_grants() noexcept { return timeout_grants.load(); }

advisory_protocol::advisory_protocol(database_impl& impl, advisory_key key, std::string description)
    : impl_(impl), sql_(advisory_statements(impl.dialect())), dialect_(impl.dialect()), key_(key),
      kind_(advisory_key_index(key)), description_(std::move(description)) {}

bool advisory_protocol::held_now(connection& conn, lock_mode mode) {
  const auto bits = static_cast<std::uint64_t>(key_.value());
  const std::vector<value> params = {
      static_cast<std::int64_t>(bits >> 32), static_cast<std::int64_t>(bits & 0xffffffffu),
      std::int64_t{key_.is_pair() ? 2 : 1}, std::string(mode == lock_mode::shared ? "ShareLock" : "ExclusiveLock")};
  const auto r = conn.exec(sql_.held, params);
  return !r.rows.empty() && r.rows[0].at(0) && *r.rows[0][0] != "0";
}

bool advisory_protocol::acquire(connection& conn, lock_mode mode, std::optional<steady::time_point> deadline,
                                std::stop_token stop, attempt& state) {
  const int m = static_cast<int>(mode);
  const auto params = advisory_lock_params(key_, conn);
  // The common case costs one round trip: a free lock is taken without touching lock_timeout.
  const auto first = conn.exec(sql_.try_lock[kind_][m], params);
  state.answered = true;
  const bool free = pg_true(own_session_or_refuse(first.rows.at(0).at(0), description_));
  if (free) return true;
  const std::string subject = description_ + " could not be taken";
  const failure_context context{.subject = subject,
                                .rolled_back = "the waiting statement (nothing was taken)",
                                .retry =
                                    "the lock, after releasing other locks this owner holds (they may be "
                                    "part of the cycle)"};
  while (true) {
    if ((deadline && steady::now() >= *deadline) || stop.stop_requested()) return false;
    // The waiting statement carries its own lock_timeout (no limit without a deadline, in case the
    // server or role configured one), set for its own transaction: nothing to reset after it, and
    // no other statement that could reach another server session behind a pooler.
    auto bounded = params;
    bounded.emplace_back(deadline ? lock_wait_units(sql_.session_lock_wait, *deadline - steady::now())
                                  : sql_.session_lock_wait.unlimited);
    bool held = false;
    std::exception_ptr failure;
    bool cancel_sent = false;
    try {
      const server_wait_bounds waits(deadline);  // the statement waits on the server: its bound covers that
      // A stop cancels the waiting statement; no request is in flight once it ended, so none
      // can hit the pg_locks check below.
      run_stoppable(impl_, conn, stop, cancel_sent, [&] {
        own_session_or_refuse(conn.exec(sql_.lock[kind_][m], bounded).rows.at(0).at(0), description_);
      });
      held = true;
    } catch (const not_supported&) {
      failure = std::current_exception();  // refused without waiting
    } catch (const backend_error& e) {
      const bool cancelled = cancel_sent && e.sqlstate() == "57014";  // query_canceled
      if (!cancelled && !ended_by_timeout(dialect_, e)) {
        try {
          rethrow_classified(dialect_, e, context);  // a deadlock victim becomes sqllock::deadlock
        } catch (...) {
          failure = std::current_exception();
        }
      } else {
        // The timeout (or the cancel of a stop) may have fired just as the lock was granted:
        // PostgreSQL then reports the error but keeps the session-level lock. pg_locks tells.
        try {
          held = held_now(conn, mode);
        } catch (const backend_error&) {
          state.dirty = true;  // a lock may be held that nobody records
          failure = std::current_exception();
        }
        if (held) timeout_grants.fetch_add(1);
      }
    }
    if (failure) std::rethrow_exception(failure);
    if (held) return true;
  }
}

bool advisory_protocol::release(connection& conn, lock_mode mode) {
  const auto r = conn.exec(sql_.unlock[kind_][static_cast<int>(mode)], advisory_lock_params(key_, conn));
  const field& released = r.rows.at(0).at(0);
  if (!released) {
    throw lock_lost(description_ +
                    " cannot be released: the statement reached another database server session than the one "
                    "that holds the lock, so the connection does not keep a server session of its own (a "
                    "transaction-mode pooler such as PgBouncer?). The lock stays with that server session until "
                    "it ends, and may already have been granted to other clients there; see \"Running on HA "
                    "setups and poolers\" in docs/operations.md");
  }
  return pg_true(released);
}

}  // namespace sqllock::detail
