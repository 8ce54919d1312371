// Every lock kind of the public API behind one interface, so a table of inputs can be run through
// all of them: table_lock, advisory_lock, with_advisory_xact_lock, named_lock, with_row_lock.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::test {

// Something that holds a lock until destroyed.
class held_lock {
 public:
  virtual ~held_lock() = default;
};

// How long an attempt may wait: not at all (try_lock / try_with_…), or a timed wait given as
// milliseconds or hours (so that std::chrono::hours::max() reaches the library as the caller
// wrote it).
using lock_wait = std::variant<std::monostate, std::chrono::milliseconds, std::chrono::hours>;

struct lock_kind {
  std::string name;  // "table_lock", "advisory_lock", "advisory_xact_lock", "named_lock", "row_lock"
  // Takes `lock` on `db` as that kind, waiting as `wait` says; the result holds it until it is
  // destroyed, or is nullptr when the lock stayed held elsewhere. Throws what the library throws
  // (for the scoped kinds, an error before the lock was taken).
  std::function<std::unique_ptr<held_lock>(const database& db, const std::string& lock, lock_wait wait)> take;
};

// The kinds `dialect` has: table_lock everywhere, advisory locks on PostgreSQL, named_lock on
// MySQL/MariaDB, row locks on both servers.
std::vector<lock_kind> lock_kinds_of(dialect_kind dialect);

}  // namespace sqllock::test
