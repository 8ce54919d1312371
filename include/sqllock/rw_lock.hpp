// sqllock/rw_lock.hpp — a leased read-write lock: many readers or one writer. Works on every
// database, including MySQL/MariaDB (which has no shared GET_LOCK) and SQLite.
//
// Readers and writers of one resource take places in its wait queue (`<table>_queue`, migration
// 0005) in arrival order. A writer holds when nobody live is ahead of it; a reader holds when no
// live writer is ahead of it. So readers that arrive while a writer waits queue behind that writer
// (no writer starvation), and the readers behind a writer all hold together once it is gone (no
// reader starvation). Places are leases, renewed in the background while waiting or holding; a
// dead process's places drop out when their own lease runs out.
//
//   sqllock::database db("mysql://app@db/app");
//   sqllock::rw_lock catalog(db, "catalog");
//   { std::shared_lock read(catalog); serve(catalog_snapshot()); }
//   { std::unique_lock write(catalog); rebuild(catalog.fence()); }
//
// Meets the SharedTimedLockable requirements (std::shared_lock, std::unique_lock,
// std::scoped_lock, std::lock_guard). Re-entrant per owner in both modes. A writer may also take
// read levels, and keeps its place when it gives back its last write level while it still reads:
// a write→read downgrade without a gap (no writer that queued meanwhile gets in between). A reader
// asking for the write lock is refused with invalid_argument: the upgrade can only deadlock (two
// readers upgrading wait for each other) — release the read lock and then lock().
//
// Fences: the ticket of a hold. Writers' tickets strictly increase per resource; a reader's ticket
// is an epoch (it is higher than the ticket of every writer that held before it), so a resource
// can refuse writes below the highest writer ticket it has seen.
//
// Thread-safety: one rw_lock object may be used by several threads; each thread is its own owner.
// Contention and timeouts return false; failures throw (sqllock/error.hpp).
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

struct rw_lock_options {
  // Lease length of a place in the queue, waiting or holding, in either mode. 1 ms–365 days.
  std::chrono::milliseconds ttl = std::chrono::seconds(30);

  // Renew the lease every ttl/3 while waiting or holding (see fair_lock_options::auto_renew).
  bool auto_renew = true;

  // Who owns an acquisition (sqllock/lock_options.hpp). Both modes of one owner share one place.
  owner_key owner{};

  // Called when the lease of a held lock (either mode) could not be renewed in time.
  lost_callback on_lost{};

  // Where unlock()'s and unlock_shared()'s errors go (sqllock/lock_options.hpp).
  unlock_error_callback on_unlock_error{};
};

class SQLLOCK_API rw_lock {
 public:
  // Names the lock `name` in db's queue table. Nothing is sent yet. Throws invalid_argument for a
  // bad name (empty, over 255 bytes, invalid UTF-8, embedded NUL) or a ttl outside 1 ms–365 days.
  rw_lock(const database& db, std::string_view name, rw_lock_options options = {});

  // Releases whatever this object still holds (errors go to on_unlock_error).
  ~rw_lock();

  rw_lock(const rw_lock&) = delete;
  rw_lock& operator=(const rw_lock&) = delete;

  // ---- write (exclusive). Waits its turn; throws invalid_argument when the calling owner holds
  // only read levels (an upgrade), connection_error / outcome_unknown / schema_error /
  // backend_error on failure.
  void lock();
  // Waits its turn until it holds (true) or a stop is requested on `stop` (false: its place is
  // given back at once). The timed forms: false when the deadline passes or a stop comes first.
  [[nodiscard]] bool lock(std::stop_token stop);
  // Holds at once or gives its place back and returns false. Throws like lock(): invalid_argument
  // when the calling owner holds only read levels (an upgrade), never returning false for that.
  [[nodiscard]] bool try_lock();
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop = {}) {
    return try_lock_until_steady(false, detail::steady_deadline_after(timeout), std::move(stop));
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline,
                                    std::stop_token stop = {}) {
    return try_lock_until_steady(false, detail::steady_deadline_at(deadline), std::move(stop));
  }
  // Gives back one write level; never throws (errors go to on_unlock_error).
  void unlock() noexcept;
  // The same, throwing not_held (nothing held, or the hold was lost) or a database error, as
  // table_lock::release() (after connection_error or backend_error the level is still held).
  void release();

  // ---- read (shared): the same contracts.
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

  // True while the calling owner holds at least one write (holds) / read (holds_shared) level and
  // the lease has not run out (local clock).
  bool holds() const noexcept;
  bool holds_shared() const noexcept;

  // Write (count) / read (shared_count) levels the calling owner took through this object and has
  // not yet released: each lock or re-entry of the mode adds one, each unlock of it takes one away
  // (a lost hold's levels count until then).
  std::int64_t count() const noexcept;
  std::int64_t shared_count() const noexcept;

  // The ticket of the calling owner's hold (either mode). Throws not_held when not holding.
  std::int64_t fence() const;

  // Signalled when the calling owner's current hold is lost. Throws not_held when not holding.
  std::stop_token lost_token() const;

  // The calling owner's current hold (write or read), for a guard inside the caller's own transaction
  // (sqllock/lease_claim.hpp, guard() in sqllock/adapters/). Throws not_held when not holding,
  // lock_lost when the hold was lost or its lease ran out by the local clock.
  lease_claim claim() const;

  // The lock's name.
  const std::string& name() const noexcept;

 private:
  bool try_lock_until_steady(bool shared, std::chrono::steady_clock::time_point deadline, std::stop_token stop);
  std::unique_ptr<detail::queue_lock_state> state_;
};

}  // namespace sqllock
