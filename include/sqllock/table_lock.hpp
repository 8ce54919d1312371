// sqllock/table_lock.hpp — a lease lock stored as a row in the lock table. Works on every
// database, including SQLite.
//
// A table_lock names one resource ("nightly-report", "user:42"). Acquiring it inserts a row, or
// re-enters it (the same owner again: the row's count goes up), or takes over a row whose lease
// expired. The lease is renewed in the background while held; if it cannot be renewed before it
// expires, the lock is *lost*: lost_token() is signalled, the on_lost callback runs and holds()
// turns false — at the local deadline (the lease from when its last confirming statement was sent,
// less 1/20 of it), before the server can grant it to anyone else, even while a renewal statement
// hangs on a silently cut network. Every acquisition gets a fencing token (fence()) that strictly increases per
// resource; pass it to the resource you protect so it can refuse writes from a stale holder.
//
//   sqllock::database db("postgresql://app@db/app");
//   sqllock::table_lock job(db, "nightly-report");
//   if (std::unique_lock guard(job, std::try_to_lock); guard) { run_report(job.fence()); }
//
// table_lock meets the TimedLockable requirements, so std::unique_lock, std::scoped_lock and
// std::lock_guard work. The owner of an acquisition is (database handle, thread) by default, like
// a recursive mutex that spans processes; table_lock_options::owner names an explicit owner so
// async code can lock on one thread and unlock on another.
//
// Thread-safety: one table_lock object may be used by several threads; each thread is its own
// owner. Contention and timeouts return false; failures throw (sqllock/error.hpp).
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "sqllock/database.hpp"
#include "sqllock/lease_claim.hpp"
#include "sqllock/deadline.hpp"
#include "sqllock/lock_options.hpp"

namespace sqllock {

namespace detail {
class table_lock_state;
}

struct table_lock_options {
  // Lease length: how long the lock survives its holder dying. Between 1 ms and 365 days.
  std::chrono::milliseconds ttl = std::chrono::seconds(30);

  // Renew the lease every ttl/3 while held. Off: the lock is held at most `ttl` after acquire
  // (then it counts as lost) — for jobs that must not run longer than that.
  bool auto_renew = true;

  // Who owns an acquisition (sqllock/lock_options.hpp).
  owner_key owner{};

  // Called on one of sqllock's lease threads when the lease of a held lock could not be renewed in
  // time (sqllock/lock_options.hpp), or on the thread whose release found it taken over.
  lost_callback on_lost{};

  // Where unlock()'s errors go (sqllock/lock_options.hpp).
  unlock_error_callback on_unlock_error{};
};

class SQLLOCK_API table_lock {
 public:
  // Names the lock `name` in db's lock table. Nothing is sent to the database yet.
  // Throws invalid_argument for an empty name, one over 255 bytes, invalid UTF-8, an embedded NUL,
  // or a ttl outside 1 ms–365 days.
  table_lock(const database& db, std::string_view name, table_lock_options options = {});

  // Releases whatever this object still holds (errors go to on_unlock_error).
  ~table_lock();

  table_lock(const table_lock&) = delete;
  table_lock& operator=(const table_lock&) = delete;

  // Blocks until acquired. Throws connection_error / outcome_unknown / schema_error /
  // backend_error on failure; never returns without the lock.
  void lock();

  // Blocks until acquired (true) or until a stop is requested on `stop` (false: nothing is held).
  // A stop ends the wait at once, or when a statement in flight returns. A stop requested before
  // the call leaves one attempt. Throws like lock().
  [[nodiscard]] bool lock(std::stop_token stop);

  // One attempt. Returns false when another owner holds a live lease, and also when the grant
  // comes back a full ttl after the attempt was sent (a paused process or network): that grant
  // is undone, because its lease may already have run out and been taken over.
  [[nodiscard]] bool try_lock();

  // Retries with capped, jittered exponential backoff until acquired (true) or the deadline
  // passes or a stop is requested on `stop` (false). Never sleeps past the deadline.
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop = {}) {
    return try_lock_until_steady(detail::steady_deadline_after(timeout), std::move(stop));
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline,
                                    std::stop_token stop = {}) {
    return try_lock_until_steady(detail::steady_deadline_at(deadline), std::move(stop));
  }

  // Releases one level of the calling owner's acquisitions. Never throws: a failure (not held,
  // lost, database error) is passed to options.on_unlock_error.
  void unlock() noexcept;

  // Like unlock(), but throws: not_held when the calling owner holds nothing here (unlock without
  // lock, or from a thread other than the one that locked), or when the lease was lost and taken
  // over (the row is left to its new owner); connection_error / backend_error when the release
  // could not be made (no connection, a statement the server refused: the level is still held and
  // renewed, so release() may be called again); outcome_unknown when its answer was lost (the hold
  // is given up: if the release did not happen, its row runs out with its lease).
  void release();

  // True while the calling owner holds the lock and its lease has not run out (by the local
  // clock, conservatively).
  bool holds() const noexcept;

  // Levels the calling owner took through this object and has not yet released: lock() and each
  // re-entry add one, unlock()/release() take one away (a lost hold's levels count until then).
  std::int64_t count() const noexcept;

  // The fencing token of the calling owner's current hold. Throws not_held when not holding.
  std::int64_t fence() const;

  // Signalled when the calling owner's current hold is lost. Throws not_held when not holding.
  std::stop_token lost_token() const;

  // The calling owner's current hold, for a guard inside the caller's own transaction
  // (sqllock/lease_claim.hpp, guard() in sqllock/adapters/). Throws not_held when not holding,
  // lock_lost when the hold was lost or its lease ran out by the local clock.
  lease_claim claim() const;

  // The lock's name.
  const std::string& name() const noexcept;

 private:
  bool try_lock_until_steady(std::chrono::steady_clock::time_point deadline, std::stop_token stop);
  std::unique_ptr<detail::table_lock_state> state_;
};

}  // namespace sqllock
