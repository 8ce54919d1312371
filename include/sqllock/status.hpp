// sqllock/status.hpp — what the lock table, the semaphore permits and the wait queue of fair and
// read-write locks hold, and removing a stuck lock by force. For operators and their tools
// (`sqllock status`, `sqllock release --force`), not for lock users.
//
//   for (const auto& l : sqllock::list_locks(db))
//     std::cout << l.resource << " held by " << l.holder_host << ':' << l.holder_pid << '\n';
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock {

// One row of the lock table, as the database saw it when it was read.
struct lock_info {
  std::string resource;     // the lock's name (bytes as stored)
  std::string owner;        // owner token: holding handle's random token + thread or owner key
  std::string holder_host;  // host name of the holder
  std::int64_t holder_pid = 0;
  std::string holder_thread;  // the holder's thread id, as text
  std::int64_t count = 0;     // reentrancy depth
  std::int64_t fence = 0;     // fencing token of the current hold
  std::string acquired_at;    // when this hold began: UTC, "YYYY-MM-DDTHH:MM:SS.mmmZ"
  // Time left on the lease by the database's clock; zero or negative once it ran out.
  std::chrono::milliseconds expires_in{0};
  // The lease ran out (expires_at <= the database's now): any acquire may take the row over and
  // the reaper may delete it.
  bool expired = false;
};

// One held (or expired, not yet reaped) semaphore permit: a row of the permits table. count is 1.
struct permit_info : lock_info {
  std::int64_t slot = 0;     // 0 … permits-1
  std::int64_t permits = 0;  // the N of the acquire that took the slot
};

// The two lock kinds that wait in the queue table: fair_lock (sqllock/fair_lock.hpp) and rw_lock
// (sqllock/rw_lock.hpp). Entries of one kind never see those of the other.
enum class queue_lock_kind { fair, rw };

// One entry of the wait queue (`<table>_queue`): an owner's place in the queue of a fair lock or
// read-write lock, holding or waiting, or expired and not yet deleted. The lock_info fields
// describe the place: `count` is its write + read levels, `fence` its ticket (its place in the
// queue and the fencing token of its hold), `acquired_at` when the place was taken, `expires_in`
// and `expired` its lease, which runs while it waits as while it holds.
struct queue_entry_info : lock_info {
  queue_lock_kind kind = queue_lock_kind::fair;
  std::int64_t write_levels = 0;  // the owner's write (exclusive) levels; a fair lock has only these
  std::int64_t read_levels = 0;   // its read (shared) levels
  // 1 for the first entry of its resource and kind in ticket order, 2 for the next, … (expired
  // entries not yet deleted count too).
  std::int64_t position = 0;
  // The live entries ahead of it that block it: every one for a writer, the writers for a reader.
  std::int64_t blockers = 0;
  // Live and nothing ahead blocks it: it holds the lock (its owner learns so at its next check,
  // a wake-up or a few hundred milliseconds later). Otherwise it waits (or expired).
  bool holds = false;

  // A writer (write_levels > 0) holds or waits for the lock exclusively; a reader shares it.
  bool writer() const noexcept { return write_levels > 0; }
};

// An advisory lock in PostgreSQL's pg_locks (locktype 'advisory', current database).
struct advisory_lock_info {
  std::int64_t pid = 0;  // backend process holding or awaiting it; 0 for a prepared transaction
  // The key as the caller passed it: one 64-bit key (pg_advisory_lock(bigint)) or two 32-bit
  // keys (pg_advisory_lock(int, int)).
  std::vector<std::int64_t> keys;
  std::string mode;      // "ExclusiveLock" or "ShareLock"
  bool granted = false;  // false: the backend is waiting for it
};

// Every row of db.table(), ordered by resource, expired rows included.
// Throws schema_error when the lock table is missing; connection_error / backend_error.
SQLLOCK_API std::vector<lock_info> list_locks(const database& db);

// The row for `name`, or nullopt when there is none.
// Throws invalid_argument for a name table_lock would reject; otherwise like list_locks.
SQLLOCK_API std::optional<lock_info> find_lock(const database& db, std::string_view name);

// PostgreSQL only: the advisory locks held or awaited in the current database, by any session.
// Throws not_supported on other dialects; connection_error / backend_error.
SQLLOCK_API std::vector<advisory_lock_info> list_advisory_locks(const database& db);

// Deletes the row for `name` whatever its owner and returns it as it was, or nullopt when there
// was none. For a stuck job: the old holder's next renewal finds the row gone and reports the
// lock lost (on_lost, lost_token()), so it must stop work guarded by the lock; a new acquire gets
// a higher fencing token. On PostgreSQL, waiters are woken as by a normal release.
// Throws invalid_argument for a bad name, schema_error when the lock table is missing,
// outcome_unknown when the connection broke after the delete was sent (check with find_lock),
// connection_error / backend_error otherwise.
SQLLOCK_API std::optional<lock_info> force_release(const database& db, std::string_view name);

// Every semaphore permit of db.table()'s permits table, ordered by name and slot, expired ones
// included. Throws schema_error when the table is missing (run `sqllock migrate`), connection_error /
// backend_error.
SQLLOCK_API std::vector<permit_info> list_permits(const database& db);

// The permits of the semaphore `name`, by slot (empty when none is held).
// Throws invalid_argument for a name semaphore would reject; otherwise like list_permits.
SQLLOCK_API std::vector<permit_info> find_permits(const database& db, std::string_view name);

// Deletes every permit of the semaphore `name` whatever its holders and returns them as they were
// (empty when there were none). As force_release does for a lock: each holder's next renewal finds
// its permit gone and reports it lost; waiters are woken on PostgreSQL. Throws as force_release.
SQLLOCK_API std::vector<permit_info> force_release_permits(const database& db, std::string_view name);

// Every entry of db.table()'s wait queue, holding, waiting or expired, ordered by name, kind and
// ticket (the order in which they get their turn). Throws schema_error when the queue table is
// missing (run `sqllock migrate`), connection_error / backend_error.
SQLLOCK_API std::vector<queue_entry_info> list_queue_entries(const database& db);

// The queue entries of the fair lock and read-write lock `name` (of `kind` only, when given), in
// the same order; empty when there are none. Throws invalid_argument for a name the locks would
// reject; otherwise like list_queue_entries.
SQLLOCK_API std::vector<queue_entry_info> find_queue_entries(const database& db, std::string_view name,
                                                             std::optional<queue_lock_kind> kind = std::nullopt);

// Deletes every queue entry of `name` (of `kind` only, when given) whatever its owner, holding or
// waiting, and returns them as they were, in queue order (empty when there were none). As
// force_release does for a lock: each holder's next renewal finds its entry gone and reports the
// lock lost (on_lost, lost_token()); each waiter finds its place gone at its next check and
// queues again at the back, behind whoever arrived meanwhile; on PostgreSQL waiters are woken at
// once. The next holder's ticket is higher than every deleted one. Throws as force_release.
SQLLOCK_API std::vector<queue_entry_info> force_release_queue_entries(
    const database& db, std::string_view name, std::optional<queue_lock_kind> kind = std::nullopt);

}  // namespace sqllock
