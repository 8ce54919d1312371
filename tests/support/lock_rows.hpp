// Writing lock rows straight into a lock table, for tests that need many of them (the reaper's)
// or rows in states the library only reaches with time (expired leases).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "sqllock/database.hpp"

namespace sqllock::test {

struct row_spec {
  std::string prefix = "dead-";  // resources are prefix + 1 … prefix + count
  std::int64_t count = 1;
  // expires_at = the database's now + this (negative: already expired).
  std::chrono::milliseconds expires_in{-60000};
  std::string session = "test-session";    // holder_session of every row
  std::chrono::milliseconds lease{60000};  // lease_ms (what a renewal extends by)
};

// Inserts the rows with one INSERT … SELECT (generate_series on PostgreSQL, a recursive CTE
// elsewhere), drawing fencing tokens as acquire does. Throws like the library.
void insert_rows(const database& db, const row_spec& spec);

// Entries of the wait queue (`<table>_queue`) written straight into it, e.g. places left by
// processes that died long ago.
struct queue_entry_spec {
  std::string prefix = "q-";  // resources are prefix + 1 … prefix + names
  std::int64_t count = 1;     // entries, given to the names in turn
  std::int64_t names = 1;
  char kind = 'F';      // 'F' fair lock, 'R' read-write lock
  bool writers = true;  // one write level each, else one read level (kind 'R' only)
  // expires_at = the database's now + this (negative: already expired).
  std::chrono::milliseconds expires_in{-60000};
  std::string session = "test-session";  // holder_session of every entry
};

// Inserts the entries with one INSERT … SELECT, drawing their tickets as an enqueue does; owners
// are "<session>-1", "<session>-2", … Throws like the library.
void insert_queue_entries(const database& db, const queue_entry_spec& spec);

// The fencing-token source's current value: the sequence's last value on PostgreSQL (0 before
// the first token), the <table>_fence row elsewhere. Works as the runtime role.
std::int64_t fence_source_value(const database& db);

}  // namespace sqllock::test
