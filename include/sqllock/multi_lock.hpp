// sqllock/multi_lock.hpp — several table locks taken together, all or none. Works on every
// database, including SQLite.
//
// A multi_lock names a set of resources ("account:17", "account:42"). Each attempt takes every
// name or none of them, and nothing is held while it waits, so two callers that need overlapping
// sets can never deadlock on each other, in whatever order they list the names (the names are
// sorted first). Each name is an ordinary table_lock row: a table_lock of one of the names
// excludes the multi_lock and vice versa, each name has its own fencing token, its lease is
// renewed by the same background statement as every table_lock of the handle, and the reaper,
// `sqllock status` and force_release() see it as a lock of its own.
//
//   sqllock::database db("postgresql://app@db/app");
//   sqllock::multi_lock transfer(db, {"account:42", "account:17"});
//   std::lock_guard guard(transfer);  // both accounts, or wait holding neither
//   move_money(transfer.fence("account:17"), transfer.fence("account:42"));
//
// multi_lock meets the TimedLockable requirements (std::unique_lock, std::scoped_lock,
// std::lock_guard work). Ownership and re-entry are table_lock's: the owner is (database handle,
// thread) unless multi_lock_options::owner names one, and an owner that already holds some of the
// names through another lock object (a table_lock, another multi_lock) of the same handle takes
// them again as a re-entry — the row's count goes up, its fence stays.
//
// One attempt costs 1 statement on SQLite, 3 round trips on PostgreSQL (BEGIN, one statement,
// COMMIT or ROLLBACK) and 3–4 on MySQL/MariaDB (START TRANSACTION, one statement, a read-back,
// COMMIT or ROLLBACK), whatever the number of names. Waiters retry with capped, jittered backoff;
// on PostgreSQL a release of any of the names wakes them at once.
//
// Thread-safety: one multi_lock object may be used by several threads; each thread is its own
// owner. Contention and timeouts return false; failures throw (sqllock/error.hpp).
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "sqllock/database.hpp"
#include "sqllock/lease_claim.hpp"
#include "sqllock/deadline.hpp"
#include "sqllock/lock_options.hpp"

namespace sqllock {

namespace detail {
class multi_lock_state;
}

// The options of a multi_lock: those of table_lock, applied to every name of the set.
struct multi_lock_options {
  // Lease length of every name: how long the set survives its holder dying. Between 1 ms and 365
  // days.
  std::chrono::milliseconds ttl = std::chrono::seconds(30);

  // Renew the leases every ttl/3 while held. Off: the set is held at most `ttl` after acquire
  // (then it counts as lost).
  bool auto_renew = true;

  // Who owns an acquisition (sqllock/lock_options.hpp).
  owner_key owner{};

  // Called once per hold when the lease of any name of the set could not be renewed in time
  // (sqllock/lock_options.hpp): on sqllock's renewal thread, or on the thread whose release found
  // a name taken over.
  lost_callback on_lost{};

  // Where unlock()'s errors go (sqllock/lock_options.hpp).
  unlock_error_callback on_unlock_error{};
};

class SQLLOCK_API multi_lock {
 public:
  // The most names one multi_lock takes. On PostgreSQL every name of an attempt holds one entry of
  // the server's shared lock table until the attempt's transaction ends (an advisory xact lock),
  // and that table has max_locks_per_transaction (default 64) entries per connection; 64 names
  // keep one attempt within its connection's share. The statements stay small too (at most a few
  // hundred bound values, far below every server's limit).
  static constexpr std::size_t max_names = 64;

  // Names the set `names` in db's lock table, in any order. Nothing is sent to the database yet.
  // Throws invalid_argument — before anything is sent — for an empty list, more than max_names
  // names, a name given twice, any name that table_lock would refuse (empty, over 255 bytes,
  // invalid UTF-8, an embedded NUL), or a ttl outside 1 ms–365 days.
  multi_lock(const database& db, std::vector<std::string> names, multi_lock_options options = {});

  // Releases whatever this object still holds (errors go to on_unlock_error).
  ~multi_lock();

  multi_lock(const multi_lock&) = delete;
  multi_lock& operator=(const multi_lock&) = delete;

  // Blocks until every name is acquired. Throws connection_error / outcome_unknown /
  // schema_error / backend_error on failure; never returns without the set.
  void lock();
  // Blocks until acquired (true) or until a stop is requested on `stop` (false: nothing is held).
  // A stop ends the wait at once, or when a statement in flight returns; one requested before the
  // call leaves one attempt. Throws like lock().
  [[nodiscard]] bool lock(std::stop_token stop);

  // One attempt. Returns false, holding none of the names, when another owner holds a live lease
  // on any of them; when the server chose the attempt as a deadlock victim; and when the grant
  // comes back a full ttl after the attempt was sent (it is undone, as table_lock does).
  [[nodiscard]] bool try_lock();

  // Retries with capped, jittered exponential backoff, holding nothing between attempts, until
  // the set is acquired (true) or the deadline passes or a stop is requested on `stop` (false).
  // Never sleeps past the deadline.
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop = {}) {
    return try_lock_until_steady(detail::steady_deadline_after(timeout), std::move(stop));
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline,
                                    std::stop_token stop = {}) {
    return try_lock_until_steady(detail::steady_deadline_at(deadline), std::move(stop));
  }

  // Releases one level of the calling owner's acquisition of every name. Never throws: a failure
  // (not held, lost, database error) is passed to options.on_unlock_error.
  void unlock() noexcept;

  // Like unlock(), but throws. Releases the names in reverse order, one statement each. not_held
  // when the calling owner holds nothing here, or when a name's lease was lost and taken over
  // (the other names are released first; the lost name's row is left to its new owner).
  // connection_error / backend_error when the first name could not be released (no connection, a
  // statement the server refused): nothing was given back and the set is still held and renewed,
  // so release() may be called again. When a later name fails, or any with outcome_unknown (the
  // answer was lost), the release still goes on with the other names, and the names it could not
  // release are given up like lost ones (renewal stops, the row is deleted by the renewal thread
  // or expires).
  void release();

  // True while the calling owner holds every name and no lease has run out (by the local clock,
  // conservatively).
  bool holds() const noexcept;

  // Levels the calling owner took through this object and has not yet released: lock() and each
  // re-entry add one, unlock()/release() take one away (a lost hold's levels count until then).
  std::int64_t count() const noexcept;

  // The fencing token of `name` in the calling owner's current hold. Throws invalid_argument when
  // `name` is not in the set, not_held when the set is not held (or that name was lost).
  std::int64_t fence(std::string_view name) const;

  // Every name's fencing token, in the order of names(). Throws not_held like fence().
  std::vector<std::int64_t> fences() const;

  // Signalled when any name of the calling owner's current hold is lost. Throws not_held when not
  // holding.
  std::stop_token lost_token() const;

  // The calling owner's current hold of every name, for a guard inside the caller's own transaction
  // (sqllock/lease_claim.hpp, guard() in sqllock/adapters/). Throws not_held when not holding,
  // lock_lost when the hold was lost or its lease ran out by the local clock.
  lease_claim claim() const;

  // The names, sorted by bytes (the order in which they are locked and fences() lists them).
  const std::vector<std::string>& names() const noexcept;

 private:
  bool try_lock_until_steady(std::chrono::steady_clock::time_point deadline, std::stop_token stop);
  std::unique_ptr<detail::multi_lock_state> state_;
};

}  // namespace sqllock
