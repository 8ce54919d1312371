// Every lock kind behind one interface, so each case is written once for all of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::bench {

// One lock object (or, for row locks, one name) as the benchmarks use it.
class locker {
 public:
  virtual ~locker() = default;
  // Waits for the lock, runs body, releases. A release the server refuses with a transient error
  // (an InnoDB deadlock) is tried again, up to 3 times, and counted in release_retries().
  virtual void run_locked(const std::function<void()>& body) = 0;
  // Takes one level and keeps it (for re-entry and held-lock cases). Row locks cannot.
  virtual void hold() = 0;
  // Gives one level back, throwing on failure.
  virtual void give_back() = 0;
};

// Releases retried after a server error since the program started (see locker::run_locked).
std::int64_t release_retries();

// A lock kind and the targets it runs on.
struct lock_kind {
  std::string name;                    // "table", "advisory", "named", "row"
  std::vector<dialect_kind> dialects;  // where it exists
  bool reentrant;                      // hold() works and may be repeated
  // A locker for `key` on db; `owner` non-empty: an explicit owner key (any thread may use it).
  std::function<std::unique_ptr<locker>(const database& db, const std::string& key, const std::string& owner)> make;
};

// table (PostgreSQL, MariaDB, SQLite), advisory (PostgreSQL), named (MariaDB), row (PostgreSQL,
// MariaDB), fair (fair_lock) and rw (rw_lock, write levels; both on every database), in report order.
const std::vector<lock_kind>& lock_kinds();

// "pg", "mariadb" or "sqlite".
std::string short_name(dialect_kind d);

// The primitives of issue 14 behind the same interface (not in lock_kinds(): they have rows and
// cases of their own). In each, `key` names what the locker takes and `owner` is ignored:
//   semaphore_kind(n)  run_locked takes one permit of the semaphore `key` with n permits
//                      (semaphore::acquire), runs body, gives it back (permit::release); named
//                      "semaphore" (n = 4) or "semaphore_<n>". Not re-entrant, hold() unsupported.
//   multi_kind(n)      run_locked takes the multi_lock of the n names "<key>-0" … "<key>-<n-1>",
//                      runs body, releases it; named "multi<n>".
//   table_seq_kind(n)  the same n names as n table_locks, locked one after another in name
//                      order and released in reverse: what a caller does without multi_lock;
//                      named "table<n>".
//   rw_shared_kind()   run_locked takes a read level of the rw_lock `key` (lock_shared), runs
//                      body, gives it back (release_shared); hold() and give_back() likewise;
//                      named "rw_shared", re-entrant.
// All four exist on PostgreSQL, MariaDB and SQLite.
const lock_kind& semaphore_kind(std::int64_t permits);
const lock_kind& multi_kind(std::size_t names);
const lock_kind& table_seq_kind(std::size_t names);
const lock_kind& rw_shared_kind();

}  // namespace sqllock::bench
