// sqllock/advisory_lock.hpp — PostgreSQL advisory locks (pg_advisory_*): fast locks that write
// nothing to any table. PostgreSQL only; on MySQL/MariaDB use named_lock, on SQLite table_lock.
//
// Two scopes:
//   * advisory_lock — a session-level lock, held until unlocked or until its session ends. While an
//     owner holds one, one pooled connection is pinned for it, and a keepalive ping reports a dead
//     session (killed, or unreachable) as a lost lock within keepalive + 1 s (see
//     session_lock_options.hpp).
//   * with_advisory_xact_lock(db, key, fn) — a transaction-level lock: sqllock opens a transaction,
//     takes pg_advisory_xact_lock, runs fn and commits (rolls back if fn throws). The lock ends
//     with the transaction; there is nothing to unlock.
//
//   sqllock::database db("postgresql://app@db/app");
//   sqllock::advisory_lock job(db, "nightly-report");
//   if (std::unique_lock guard(job, std::try_to_lock); guard) run_report();
//
// PgBouncer (or any pooler) in *transaction* pooling mode: a session-level lock is taken on
// whichever server connection ran that statement, and the pooler may hand the next statement —
// including the unlock — to another one. The lock then strands on a pooled server connection
// until the pooler recycles it (server_lifetime, an hour by default). Behind such a pooler use the
// transaction scope (with_advisory_xact_lock, or sqllock/adapters/pqxx.hpp inside your own
// transaction): a transaction stays on one server connection and the lock ends with it. Session
// pooling and direct connections are fine for both scopes.
//
// Keys. PostgreSQL identifies an advisory lock by one 64-bit key or by two 32-bit keys; the two
// key spaces never overlap. A name maps to a 64-bit key: the first 8 bytes of SHA-256 of the name's
// UTF-8 bytes, read big-endian as a signed integer. The same key in SQL:
//   ('x' || left(encode(sha256(convert_to(name, 'UTF8')), 'hex'), 16))::bit(64)::bigint
// so other programs, psql and pg_locks (classid = high half, objid = low half, objsubid = 1) can
// find it. Distinct names could in theory share a key (2^-64 per pair); names that must never
// collide can use integer keys instead.
//
// Modes. Exclusive (lock/unlock) and shared (lock_shared/unlock_shared): shared holders coexist
// and exclude exclusive ones. advisory_lock is TimedLockable and SharedTimedLockable, so
// std::unique_lock, std::scoped_lock, std::lock_guard and std::shared_lock work.
//
// Re-entry follows PostgreSQL: requests of one session stack, and each level needs one unlock.
// The owner (calling thread by default) has one session per database handle, so two
// advisory_lock objects on the same key in one thread re-enter rather than deadlock. count() is
// the number of levels the calling owner took through *this* object and has not released; more
// unlocks than locks is an error (not_held), never a release of someone else's level.
//
// Timed waits use PostgreSQL's lock_timeout, set for the one waiting statement and reset after.
// PostgreSQL may grant the lock in the instant the timeout fires and still report the timeout
// (SQLSTATE 55P03); sqllock then checks pg_locks, so such a lock is reported as acquired, never
// leaked. A statement_timeout that ends a wait early is handled the same way.
//
// Thread-safety: one object may be used from many threads; each thread is its own owner (unless
// options.owner is set). Contention and timeouts return false; failures throw (sqllock/error.hpp).
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "sqllock/database.hpp"
#include "sqllock/deadline.hpp"
#include "sqllock/scoped_result.hpp"
#include "sqllock/session_lock_options.hpp"

namespace sqllock {

namespace detail {
class session_lock;
}

// Which advisory lock: one 64-bit key, or a pair of 32-bit keys (a separate key space).
class SQLLOCK_API advisory_key {
 public:
  // The 64-bit key `key`.
  explicit advisory_key(std::int64_t key) noexcept : value_(key), pair_(false) {}
  // The two-integer key (first, second). Never equal to any 64-bit key.
  advisory_key(std::int32_t first, std::int32_t second) noexcept
      : value_(static_cast<std::int64_t>((static_cast<std::uint64_t>(static_cast<std::uint32_t>(first)) << 32) |
                                         static_cast<std::uint32_t>(second))),
        pair_(true) {}

  // The 64-bit key of a name (see the header comment for the rule). Throws invalid_argument for
  // an empty name, one over 255 bytes, invalid UTF-8 or an embedded NUL.
  static advisory_key from_name(std::string_view name);

  // True for a two-integer key.
  bool is_pair() const noexcept { return pair_; }
  // The 64-bit key; for a pair, both halves packed (first in the high half).
  std::int64_t value() const noexcept { return value_; }
  // The high and low halves; for a pair, the two keys.
  std::int32_t first() const noexcept { return static_cast<std::int32_t>(static_cast<std::uint64_t>(value_) >> 32); }
  std::int32_t second() const noexcept { return static_cast<std::int32_t>(static_cast<std::uint32_t>(value_)); }

  // "123" or "(1, 2)", for messages.
  std::string to_string() const;

  friend bool operator==(const advisory_key&, const advisory_key&) = default;

 private:
  std::int64_t value_;
  bool pair_;
};

using advisory_lock_options = session_lock_options;

class SQLLOCK_API advisory_lock {
 public:
  // The lock on the key of `name` (advisory_key::from_name), or on `key`. Nothing is sent yet.
  // Throws not_supported unless db is PostgreSQL; invalid_argument for a bad name, an owner key
  // over 128 bytes or a keepalive outside 10 ms–1 h.
  advisory_lock(const database& db, std::string_view name, advisory_lock_options options = {});
  advisory_lock(const database& db, advisory_key key, advisory_lock_options options = {});

  // Releases whatever this object still holds (errors go to on_unlock_error).
  ~advisory_lock();
  advisory_lock(const advisory_lock&) = delete;
  advisory_lock& operator=(const advisory_lock&) = delete;

  // ---- exclusive
  // Blocks until acquired. Throws connection_error (the session died; nothing is held),
  // deadlock (a backend_error: PostgreSQL picked this wait as a deadlock victim, SQLSTATE 40P01;
  // nothing was taken) or another backend_error.
  void lock();
  // Waits until acquired (true) or until a stop is requested on `stop` (false: nothing is held).
  // A stop cancels the waiting statement from another connection of the handle
  // (pg_cancel_backend, allowed for the session's own role: the session and the locks it holds
  // live on), so the wait ends within a round trip or two; one requested before the call leaves
  // one attempt. Throws like lock().
  [[nodiscard]] bool lock(std::stop_token stop);
  // One attempt without waiting (pg_try_advisory_lock). False when another session holds it.
  [[nodiscard]] bool try_lock();
  // Waits up to `timeout` (lock_timeout), any std::chrono duration (saturated, see deadline.hpp:
  // hours::max() waits like lock()). False when it is still held elsewhere by then, or a stop was
  // requested on `stop` (as lock(stop)).
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop = {}) {
    return try_lock_until_steady(false, detail::steady_deadline_after(timeout), std::move(stop));
  }
  // Waits until `deadline`, on any clock. False when it is still held elsewhere by then, or a
  // stop was requested on `stop`.
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline,
                                    std::stop_token stop = {}) {
    return try_lock_until_steady(false, detail::steady_deadline_at(deadline), std::move(stop));
  }
  // Releases one exclusive level of the calling owner. Never throws: failures go to
  // options.on_unlock_error.
  void unlock() noexcept;
  // Like unlock(), but throws: not_held when the calling owner holds no exclusive level through
  // this object, or when the session died (the server already freed the lock; work it guarded may
  // have overlapped another holder's); connection_error / backend_error on failure.
  void release();

  // ---- shared: the same contracts for the shared mode
  void lock_shared();
  [[nodiscard]] bool lock_shared(std::stop_token stop);
  [[nodiscard]] bool try_lock_shared();
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop = {}) {
    return try_lock_until_steady(true, detail::steady_deadline_after(timeout), std::move(stop));
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& deadline,
                                           std::stop_token stop = {}) {
    return try_lock_until_steady(true, detail::steady_deadline_at(deadline), std::move(stop));
  }
  void unlock_shared() noexcept;
  void release_shared();

  // ---- state of the calling owner's holds through this object
  // True while it holds at least one exclusive (holds) / shared (holds_shared) level and the
  // session is not known to be dead.
  bool holds() const noexcept;
  bool holds_shared() const noexcept;
  // Levels taken through this object and not yet released (including those of a lost session).
  std::int64_t count() const noexcept;
  std::int64_t shared_count() const noexcept;
  // Signalled when the session holding the calling owner's levels dies. Throws not_held when the
  // calling owner holds nothing through this object.
  std::stop_token lost_token() const;

  const advisory_key& key() const noexcept;
  // The name given to the constructor; empty when constructed from a key.
  const std::string& name() const noexcept;

 private:
  bool try_lock_until_steady(bool shared, std::chrono::steady_clock::time_point deadline, std::stop_token stop);

  advisory_key key_;
  std::string name_;
  std::unique_ptr<detail::session_lock> state_;
};

// ---- transaction scope

// Exclusive (pg_advisory_xact_lock) or shared (pg_advisory_xact_lock_shared).
enum class advisory_mode { exclusive, shared };

struct advisory_xact_options {
  advisory_mode mode = advisory_mode::exclusive;
  // Ping period of the transaction's session while fn runs (see session_lock_options).
  std::chrono::milliseconds keepalive = std::chrono::seconds(5);
};

namespace detail {
// Opens a transaction on a pooled connection, takes the transaction-level advisory lock — waiting
// forever (deadline nullopt), until `deadline`, or not at all (a deadline already past) — runs body
// with a token that is signalled if the session dies, and commits; rolls back and rethrows if body
// throws. Returns false, without running body, when the lock was not acquired in time.
SQLLOCK_API bool run_with_advisory_xact_lock(const database& db, const advisory_key& key,
                                             std::optional<std::chrono::steady_clock::time_point> deadline,
                                             std::stop_token stop, const advisory_xact_options& options,
                                             const std::function<void(std::stop_token)>& body);

template <class F>
decltype(auto) invoke_with_token(F& fn, std::stop_token token) {
  if constexpr (std::is_invocable_v<F&, std::stop_token>)
    return fn(std::move(token));
  else
    return fn();
}

template <class F>
using xact_result_t = decltype(invoke_with_token(std::declval<F&>(), std::stop_token{}));

// Runs fn under the lock and keeps its result (see scoped_result.hpp).
template <class F>
auto run_keeping_result(const database& db, const advisory_key& key,
                        std::optional<std::chrono::steady_clock::time_point> deadline,
                        const advisory_xact_options& options, F& fn, std::stop_token stop = {}) {
  auto call = [&fn](std::stop_token token) -> xact_result_t<F> { return invoke_with_token(fn, std::move(token)); };
  return scoped_result<xact_result_t<F>>::keep(
      [&](const auto& body) { return run_with_advisory_xact_lock(db, key, deadline, stop, options, body); }, call);
}
}  // namespace detail

// Runs fn() — or fn(std::stop_token), signalled if the session dies meanwhile — inside a
// sqllock-managed transaction that holds pg_advisory_xact_lock(key), waiting as long as needed;
// commits when fn returns and rolls back when it throws (fn's exception propagates). Returns what
// fn returns. fn cannot run SQL in that transaction (use sqllock/adapters/pqxx.hpp to lock inside
// your own). Safe behind PgBouncer in transaction mode. Each call is its own transaction on its
// own connection: calling it again inside fn for the same key waits for itself forever.
// Throws not_supported unless PostgreSQL; connection_error / backend_error when the lock cannot be
// taken — deadlock (a transaction_rollback) when PostgreSQL picked this wait as a deadlock victim
// (fn did not run; retry the call); lock_lost when the session died while fn ran (fn has
// completed; the lock ended early, so its work may have overlapped another holder's).
template <class F>
auto with_advisory_xact_lock(const database& db, const advisory_key& key, F&& fn,
                             const advisory_xact_options& options = {}) -> detail::xact_result_t<F> {
  return detail::scoped_result<detail::xact_result_t<F>>::value(
      detail::run_keeping_result(db, key, std::nullopt, options, fn));
}
// The same, on the key of `name` (advisory_key::from_name).
template <class F>
auto with_advisory_xact_lock(const database& db, std::string_view name, F&& fn,
                             const advisory_xact_options& options = {}) -> detail::xact_result_t<F> {
  return with_advisory_xact_lock(db, advisory_key::from_name(name), std::forward<F>(fn), options);
}

// Like with_advisory_xact_lock, but a stop requested on `stop` ends the wait: the waiting
// statement is cancelled on the server from another connection of `db` (pg_cancel_backend), its
// transaction rolled back, and the call returns false (void fn) or std::nullopt without running
// fn, as try_with_advisory_xact_lock_for does. A stop requested before the call leaves one attempt
// without waiting; one requested while fn runs changes nothing (fn's token is the session's).
template <class F>
[[nodiscard]] auto with_advisory_xact_lock(const database& db, const advisory_key& key, std::stop_token stop, F&& fn,
                                           const advisory_xact_options& options = {}) {
  return detail::run_keeping_result(db, key, std::nullopt, options, fn, std::move(stop));
}
// The same, on the key of `name` (advisory_key::from_name).
template <class F>
[[nodiscard]] auto with_advisory_xact_lock(const database& db, std::string_view name, std::stop_token stop, F&& fn,
                                           const advisory_xact_options& options = {}) {
  return with_advisory_xact_lock(db, advisory_key::from_name(name), std::move(stop), std::forward<F>(fn), options);
}

// Like with_advisory_xact_lock, but waits at most `timeout`, any std::chrono duration (saturated,
// see deadline.hpp: hours::max() waits like with_advisory_xact_lock; zero or less is one
// pg_try_advisory_xact_lock, no wait). Returns true (void fn) or fn's result when fn ran, false /
// std::nullopt when the lock was still held elsewhere (fn did not run). Throws like
// with_advisory_xact_lock.
template <class Rep, class Period, class F>
[[nodiscard]] auto try_with_advisory_xact_lock_for(const database& db, const advisory_key& key,
                                                   const std::chrono::duration<Rep, Period>& timeout, F&& fn,
                                                   const advisory_xact_options& options = {}) {
  return detail::run_keeping_result(db, key, detail::steady_deadline_after(timeout), options, fn);
}
// The same, on the key of `name` (advisory_key::from_name).
template <class Rep, class Period, class F>
[[nodiscard]] auto try_with_advisory_xact_lock_for(const database& db, std::string_view name,
                                                   const std::chrono::duration<Rep, Period>& timeout, F&& fn,
                                                   const advisory_xact_options& options = {}) {
  return try_with_advisory_xact_lock_for(db, advisory_key::from_name(name), timeout, std::forward<F>(fn), options);
}

// Like try_with_advisory_xact_lock_for, but waits until `deadline`, a time point of any clock
// (turned into a wait from now, saturated: see deadline.hpp); a deadline already past is one
// pg_try_advisory_xact_lock, no wait.
template <class Clock, class Duration, class F>
[[nodiscard]] auto try_with_advisory_xact_lock_until(const database& db, const advisory_key& key,
                                                     const std::chrono::time_point<Clock, Duration>& deadline, F&& fn,
                                                     const advisory_xact_options& options = {}) {
  return detail::run_keeping_result(db, key, detail::steady_deadline_at(deadline), options, fn);
}
// The same, on the key of `name` (advisory_key::from_name).
template <class Clock, class Duration, class F>
[[nodiscard]] auto try_with_advisory_xact_lock_until(const database& db, std::string_view name,
                                                     const std::chrono::time_point<Clock, Duration>& deadline, F&& fn,
                                                     const advisory_xact_options& options = {}) {
  return try_with_advisory_xact_lock_until(db, advisory_key::from_name(name), deadline, std::forward<F>(fn), options);
}

// try_with_advisory_xact_lock_for and _until, ending the wait also on a stop requested on `stop`
// (see with_advisory_xact_lock(db, key, stop, fn)).
template <class Rep, class Period, class F>
[[nodiscard]] auto try_with_advisory_xact_lock_for(const database& db, const advisory_key& key,
                                                   const std::chrono::duration<Rep, Period>& timeout,
                                                   std::stop_token stop, F&& fn,
                                                   const advisory_xact_options& options = {}) {
  return detail::run_keeping_result(db, key, detail::steady_deadline_after(timeout), options, fn, std::move(stop));
}
template <class Rep, class Period, class F>
[[nodiscard]] auto try_with_advisory_xact_lock_for(const database& db, std::string_view name,
                                                   const std::chrono::duration<Rep, Period>& timeout,
                                                   std::stop_token stop, F&& fn,
                                                   const advisory_xact_options& options = {}) {
  return try_with_advisory_xact_lock_for(db, advisory_key::from_name(name), timeout, std::move(stop),
                                         std::forward<F>(fn), options);
}
template <class Clock, class Duration, class F>
[[nodiscard]] auto try_with_advisory_xact_lock_until(const database& db, const advisory_key& key,
                                                     const std::chrono::time_point<Clock, Duration>& deadline,
                                                     std::stop_token stop, F&& fn,
                                                     const advisory_xact_options& options = {}) {
  return detail::run_keeping_result(db, key, detail::steady_deadline_at(deadline), options, fn, std::move(stop));
}
template <class Clock, class Duration, class F>
[[nodiscard]] auto try_with_advisory_xact_lock_until(const database& db, std::string_view name,
                                                     const std::chrono::time_point<Clock, Duration>& deadline,
                                                     std::stop_token stop, F&& fn,
                                                     const advisory_xact_options& options = {}) {
  return try_with_advisory_xact_lock_until(db, advisory_key::from_name(name), deadline, std::move(stop),
                                           std::forward<F>(fn), options);
}

// The former name of try_with_advisory_xact_lock_for, which it calls (and saturates the same way).
template <class Rep, class Period, class F>
[[nodiscard, deprecated("use sqllock::try_with_advisory_xact_lock_for")]] auto try_with_advisory_xact_lock(
    const database& db, const advisory_key& key, const std::chrono::duration<Rep, Period>& timeout, F&& fn,
    const advisory_xact_options& options = {}) {
  return try_with_advisory_xact_lock_for(db, key, timeout, std::forward<F>(fn), options);
}
template <class Rep, class Period, class F>
[[nodiscard, deprecated("use sqllock::try_with_advisory_xact_lock_for")]] auto try_with_advisory_xact_lock(
    const database& db, std::string_view name, const std::chrono::duration<Rep, Period>& timeout, F&& fn,
    const advisory_xact_options& options = {}) {
  return try_with_advisory_xact_lock_for(db, name, timeout, std::forward<F>(fn), options);
}

}  // namespace sqllock
