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
  std::string session = "test-session";  // holder_session of every row
  std::chrono::milliseconds lease{60000};  // lease_ms (what a renewal extends by)
};

// Inserts the rows with one INSERT … SELECT (generate_series on PostgreSQL, a recursive CTE
// elsewhere), drawing fencing tokens as acquire does. Throws like the library.
void insert_rows(const database& db, const row_spec& spec);

// The fencing-token source's current value: the sequence's last value on PostgreSQL (0 before
// the first token), the <table>_fence row elsewhere. Works as the runtime role.
std::int64_t fence_source_value(const database& db);

}  // namespace sqllock::test
