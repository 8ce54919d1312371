// sqllock/fair_lock.hpp — a lease lock granted in arrival order. Works on every database,
// including SQLite.
//
// A fair_lock names one resource. Each acquire takes a place in the resource's wait queue (a row
// of `<table>_queue`, migration 0005) with a ticket drawn when it arrives at the database, and
// holds when no live place with a lower ticket is left: waiters are served first come, first
// served, whoever polls faster. A waiting place is a lease like a held one, renewed by the
// handle's one renewal statement, so a live waiter keeps its place however long it waits, and a
// dead one (SIGKILL, lost network) drops out when its own lease runs out. The ticket of the hold
// is its fencing token: it strictly increases per resource.
//
//   sqllock::database db("postgresql://app@db/app");
//   sqllock::fair_lock turn(db, "printer");
//   std::unique_lock guard(turn);            // waits its turn
//   print(job, turn.fence());
//
// Like table_lock: re-entrant per owner, leased with background renewal, a loss signal, and
// TimedLockable (std::unique_lock, std::scoped_lock, std::lock_guard). A fair_lock and a
// table_lock of the same name are different locks and do not exclude each other.
//
// Thread-safety: one fair_lock object may be used by several threads; each thread is its own
// owner. Contention and timeouts return false; failures throw (sqllock/error.hpp).
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <cstdint>
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
class queue_lock_state;
}

struct fair_lock_options {
  // Lease length of a place in the queue, waiting or holding: how long the lock (or a waiter's
  // place) survives its process dying. Between 1 ms and 365 days.
  std::chrono::milliseconds ttl = std::chrono::seconds(30);

  // Renew the lease every ttl/3 while waiting or holding. Off: a place lasts at most `ttl` after
  // it was taken (a hold that outlives it counts as lost; a waiter whose place ran out takes a
  // new one at the back of the queue).
  bool auto_renew = true;

  // Who owns an acquisition (sqllock/lock_options.hpp).
  owner_key owner{};

  // Called when the lease of a held lock could not be renewed in time (sqllock/lock_options.hpp).
  lost_callback on_lost{};

  // Where unlock()'s errors go (sqllock/lock_options.hpp).
  unlock_error_callback on_unlock_error{};
};

class SQLLOCK_API fair_lock {
 public:
  // Names the lock `name` in db's queue table. Nothing is sent to the database yet.
  // Throws invalid_argument for an empty name, one over 255 bytes, invalid UTF-8, an embedded NUL,
  // or a ttl outside 1 ms–365 days.
  fair_lock(const database& db, std::string_view name, fair_lock_options options = {});

  // Releases whatever this object still holds (errors go to on_unlock_error).
  ~fair_lock();

  fair_lock(const fair_lock&) = delete;
  fair_lock& operator=(const fair_lock&) = delete;

  // Takes a place in the queue and waits its turn. Throws connection_error / outcome_unknown /
  // schema_error / backend_error on failure (its place is given back, or runs out with its lease);
  // never returns without the lock.
  void lock();

  // Waits its turn until it holds (true) or until a stop is requested on `stop` (false: its place
  // is given back at once, nothing is held). A stop ends the wait at once, or when a statement in
  // flight returns; one requested before the call leaves one attempt. Throws like lock().
  [[nodiscard]] bool lock(std::stop_token stop);

  // One attempt: holds at once (re-entry, or nobody live ahead), else gives its place back and
  // returns false.
  [[nodiscard]] bool try_lock();

  // Waits its turn until the deadline; false (and the place given back) when it passes first or
  // a stop is requested on `stop`.
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop = {}) {
    return try_lock_until_steady(detail::steady_deadline_after(timeout), std::move(stop));
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline,
                                    std::stop_token stop = {}) {
    return try_lock_until_steady(detail::steady_deadline_at(deadline), std::move(stop));
  }

  // Releases one level of the calling owner's acquisitions (the place leaves the queue with the
  // last). Never throws: a failure goes to options.on_unlock_error.
  void unlock() noexcept;

  // Like unlock(), but throws: not_held when the calling owner holds nothing here, or when its
  // hold was lost; connection_error / backend_error / outcome_unknown as table_lock::release()
  // (after the first two the level is still held, for another release).
  void release();

  // True while the calling owner holds the lock and its lease has not run out (local clock).
  bool holds() const noexcept;

  // Levels the calling owner took through this object and has not yet released: lock() and each
  // re-entry add one, unlock()/release() take one away (a lost hold's levels count until then).
  std::int64_t count() const noexcept;

  // The fencing token (the ticket) of the calling owner's hold. Throws not_held when not holding.
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
  std::unique_ptr<detail::queue_lock_state> state_;
};

}  // namespace sqllock
