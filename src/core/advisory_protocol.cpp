#include "core/advisory_protocol.hpp"

#include <algorithm>
#include <atomic>

#include "common/identity.hpp"
#include "dialect/dialect.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

using steady = std::chrono::steady_clock;

std::atomic<std::uint64_t> timeout_grants{0};

// statement_timeout (query_canceled) ended the wait. Like lock_timeout, it can fire in the
// instant the lock is granted.
bool ended_by_timeout(dialect_kind dialect, const backend_error& e) {
  const error_kind kind = classify(dialect, e);
  return kind == error_kind::lock_not_available || kind == error_kind::query_canceled;
}

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
      what + " refused: the statement reached a database server session where another connection holds this "
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

std::string lock_timeout_text(steady::duration left) {
  // PostgreSQL refuses a lock_timeout over INT_MAX ms (24.8 days); a longer wait is made of such
  // rounds by the callers' loops.
  constexpr long long kMaxLockTimeoutMs = 2147483647;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return std::to_string(std::clamp<long long>(ms, 1, kMaxLockTimeoutMs)) + "ms";
}

bool pg_true(const field& f) noexcept { return f && (*f == "t" || *f == "true" || *f == "1"); }

std::uint64_t advisory_timeout_grants() noexcept { return timeout_grants.load(); }

advisory_protocol::advisory_protocol(dialect_kind dialect, advisory_key key, std::string description)
    : sql_(advisory_statements(dialect)),
      dialect_(dialect),
      key_(key),
      kind_(advisory_key_index(key)),
      description_(std::move(description)) {}

bool advisory_protocol::held_now(connection& conn, lock_mode mode) {
  const auto bits = static_cast<std::uint64_t>(key_.value());
  const std::vector<value> params = {static_cast<std::int64_t>(bits >> 32), static_cast<std::int64_t>(bits & 0xffffffffu),
                                     std::int64_t{key_.is_pair() ? 2 : 1},
                                     std::string(mode == lock_mode::shared ? "ShareLock" : "ExclusiveLock")};
  const auto r = conn.exec(sql_.held, params);
  return !r.rows.empty() && r.rows[0].at(0) && *r.rows[0][0] != "0";
}

bool advisory_protocol::acquire(connection& conn, lock_mode mode, std::optional<steady::time_point> deadline,
                                attempt& state) {
  const int m = static_cast<int>(mode);
  const auto params = advisory_lock_params(key_, conn);
  // The common case costs one round trip: a free lock is taken without touching lock_timeout.
  const auto first = conn.exec(sql_.try_lock[kind_][m], params);
  state.answered = true;
  const bool free = pg_true(own_session_or_refuse(first.rows.at(0).at(0), description_));
  if (free) return true;
  while (true) {
    if (deadline && steady::now() >= *deadline) return false;
    // lock_timeout is set for this session only around the one waiting statement ("0": no
    // limit, in case the server or role configured one).
    conn.exec(sql_.set_lock_timeout, std::vector<value>{deadline ? lock_timeout_text(*deadline - steady::now()) : "0"});
    bool held = false;
    std::exception_ptr failure;
    try {
      own_session_or_refuse(conn.exec(sql_.lock[kind_][m], params).rows.at(0).at(0), description_);
      held = true;
    } catch (const not_supported&) {
      failure = std::current_exception();  // refused without waiting; lock_timeout is reset below
    } catch (const backend_error& e) {
      if (!ended_by_timeout(dialect_, e)) {
        failure = std::current_exception();
      } else {
        // The timeout may have fired just as the lock was granted: PostgreSQL then reports the
        // timeout but keeps the session-level lock. pg_locks tells.
        try {
          held = held_now(conn, mode);
        } catch (const backend_error&) {
          state.dirty = true;  // a lock may be held that nobody records
          failure = std::current_exception();
        }
        if (held) timeout_grants.fetch_add(1);
      }
    }
    try {
      conn.exec_direct(sql_.reset_lock_timeout);
    } catch (const backend_error&) {
      state.dirty = true;
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
