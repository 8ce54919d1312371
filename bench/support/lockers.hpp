// Every lock kind behind one interface, so each case is written once for all of them.
#pragma once

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
  std::string name;                   // "table", "advisory", "named", "row"
  std::vector<dialect_kind> dialects;  // where it exists
  bool reentrant;                     // hold() works and may be repeated
  // A locker for `key` on db; `owner` non-empty: an explicit owner key (any thread may use it).
  std::function<std::unique_ptr<locker>(const database& db, const std::string& key, const std::string& owner)> make;
};

// table (PostgreSQL, MariaDB, SQLite), advisory (PostgreSQL), named (MariaDB), row (PostgreSQL,
// MariaDB), in report order.
const std::vector<lock_kind>& lock_kinds();

// "pg", "mariadb" or "sqlite".
std::string short_name(dialect_kind d);

}  // namespace sqllock::bench
