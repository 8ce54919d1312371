// sqllock/status.hpp — what the lock table holds, and removing a stuck lock by force. For
// operators and their tools (`sqllock status`, `sqllock release --force`), not for lock users.
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
  std::string resource;       // the lock's name (bytes as stored)
  std::string owner;          // owner token: holding handle's random token + thread or owner key
  std::string holder_host;    // host name of the holder
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

}  // namespace sqllock
