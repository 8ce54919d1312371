// sqllock/semaphore.hpp — N permits per name: at most N holders at once, across processes and
// hosts. Works on every database, including SQLite.
//
// A semaphore named "encoder" with 3 permits has three slots, 0, 1 and 2. An acquire takes a free
// slot — a row in the permits table whose primary key (name, slot) is what makes a fourth
// acquire wait: nothing is ever counted, so two acquirers can never both take the last permit.
// Each permit is *owned* and *leased*, like a table_lock: it is renewed in the background while
// held, and a holder that dies gives it back when its lease runs out (at once with
// `sqllock release --force` or the reaper after the lease). There is no ownerless release(): a
// permit is given back only by its own handle, so a double or stale release can never make room
// for an N+1st holder.
//
//   sqllock::semaphore encoders(db, "encoder", 3);
//   if (auto p = encoders.try_acquire_for(10s)) {
//     encode(p->fence());          // released when p goes out of scope
//   }
//
// Every grant of a slot gets a fencing token that strictly increases per (name, slot). Tokens of
// different slots are not ordered in a useful way (two permits are legitimately held at once): a
// resource that fences writers must keep its high-water mark per (name, slot) — permit::slot().
//
// N is given by every caller. Callers that disagree about N stay safe: a caller with N = 3 is
// refused whenever slots 0–2 are all held, whatever else is, so the number of holders never
// exceeds the largest N in use; `sqllock status` shows the N each permit was taken with.
//
// Not re-entrant: every acquire takes another permit, also from the same thread. Thread-safe:
// one semaphore object may be used by many threads; a permit object by one thread at a time.
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "sqllock/database.hpp"
#include "sqllock/lease_claim.hpp"
#include "sqllock/deadline.hpp"
#include "sqllock/lock_options.hpp"

namespace sqllock {

namespace detail {
class semaphore_state;
class permit_state;
}  // namespace detail

struct semaphore_options {
  // Lease of each permit: how long a permit survives its holder dying. Between 1 ms and 365 days.
  std::chrono::milliseconds ttl = std::chrono::seconds(30);

  // Renew the lease every ttl/3 while held (one statement per handle renews all its locks and
  // permits). Off: a permit is held at most `ttl` after it was granted, then counts as lost.
  bool auto_renew = true;

  // Called on sqllock's renewal thread when the lease of a held permit could not be renewed in
  // time (sqllock/lock_options.hpp), or on the thread whose release found it taken over.
  lost_callback on_lost{};

  // Where the errors of a permit's destructor go (sqllock/lock_options.hpp).
  unlock_error_callback on_unlock_error{};
};

// One held permit: move-only, released by its destructor (errors to on_unlock_error) or by
// release(). A default-constructed or moved-from permit holds nothing.
class SQLLOCK_API permit {
 public:
  permit() noexcept;
  permit(permit&& other) noexcept;
  // Releases what this permit holds (errors to on_unlock_error), then takes over `other`'s.
  permit& operator=(permit&& other) noexcept;
  ~permit();

  // True while this permit holds its slot and its lease has not run out (by the local clock,
  // conservatively). False once released, lost or moved from.
  bool holds() const noexcept;

  // The permit's slot, 0 … N-1. Throws not_held when this object holds no permit.
  std::int64_t slot() const;

  // The fencing token of this grant: increases per (name, slot). Throws not_held when this object
  // holds no permit.
  std::int64_t fence() const;

  // Signalled when the permit's lease is lost. Throws not_held when this object holds no permit.
  std::stop_token lost_token() const;

  // This permit's hold, for a guard inside the caller's own transaction (sqllock/lease_claim.hpp,
  // guard() in sqllock/adapters/). Throws not_held when this object holds no permit, lock_lost
  // when the permit was lost or its lease ran out by the local clock.
  lease_claim claim() const;

  // The semaphore's name. Throws not_held when this object holds no permit.
  const std::string& name() const;

  // Gives the permit back; afterwards this object holds nothing. Throws not_held when it holds
  // nothing, or when the lease was lost and the slot taken over (the row is left to its new
  // holder); connection_error / backend_error when the release could not be made (no connection,
  // a statement the server refused: the permit is still held and renewed, so release() may be
  // called again; its destructor gives it up after one try); outcome_unknown when its answer was
  // lost (the permit is given up: if the release did not happen, the handle's next renewal deletes
  // its row when the handle renews other leases, or the row runs out with its lease).
  void release();

 private:
  friend class semaphore;
  explicit permit(std::unique_ptr<detail::permit_state> state) noexcept;
  std::unique_ptr<detail::permit_state> state_;
};

class SQLLOCK_API semaphore {
 public:
  // The semaphore `name` with `permits` slots in db's permits table. Nothing is sent yet.
  // Throws invalid_argument for a name as table_lock refuses it, a number of permits outside
  // 1–10000, or a ttl outside 1 ms–365 days.
  semaphore(const database& db, std::string_view name, std::int64_t permits, semaphore_options options = {});
  ~semaphore();
  semaphore(const semaphore&) = delete;
  semaphore& operator=(const semaphore&) = delete;

  // One attempt: a permit, or nullopt when all N slots are held by live permits (and also when a
  // grant came back a full ttl after it was asked for: it is given back, as table_lock does). A
  // free slot that a concurrent acquire takes first is no refusal: the attempt takes another free
  // slot, so N racing attempts on N free permits all get one.
  // Throws connection_error / outcome_unknown / schema_error / backend_error on failure.
  [[nodiscard]] std::optional<permit> try_acquire();

  // Retries with capped, jittered backoff — woken at once by a release on PostgreSQL — until a
  // permit is granted or the deadline passes or a stop is requested on `stop` (nullopt). Never
  // sleeps past the deadline or past the
  // moment the first held permit's lease runs out. Any duration or clock; huge values saturate.
  template <class Rep, class Period>
  [[nodiscard]] std::optional<permit> try_acquire_for(const std::chrono::duration<Rep, Period>& timeout,
                                                      std::stop_token stop = {}) {
    return try_acquire_until_steady(detail::steady_deadline_after(timeout), std::move(stop));
  }
  template <class Clock, class Duration>
  [[nodiscard]] std::optional<permit> try_acquire_until(const std::chrono::time_point<Clock, Duration>& deadline,
                                                        std::stop_token stop = {}) {
    return try_acquire_until_steady(detail::steady_deadline_at(deadline), std::move(stop));
  }

  // Blocks until a permit is granted. Throws on failure; never returns without a permit.
  [[nodiscard]] permit acquire();

  // Blocks until a permit is granted, or until a stop is requested on `stop` (nullopt). A stop
  // ends the wait at once, or when a statement in flight returns; one requested before the call
  // leaves one attempt. Throws like acquire().
  [[nodiscard]] std::optional<permit> acquire(std::stop_token stop);

  const std::string& name() const noexcept;
  std::int64_t permits() const noexcept;

 private:
  std::optional<permit> try_acquire_until_steady(std::chrono::steady_clock::time_point deadline, std::stop_token stop);
  std::unique_ptr<detail::semaphore_state> state_;
};

}  // namespace sqllock
