// The environment `sqllock run` gives its command: sqllock's own, less any SQLLOCK_* variable an
// outer `sqllock run` set, plus what the command needs to protect its writes — above all the
// lock's fencing token (SQLLOCK_FENCE), which a storage write can compare against the highest
// token it has seen so that a holder whose lock has already passed to another is refused.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sqllock::cli {

// What the command is told about the lock it runs under.
struct run_env_values {
  std::string kind;                                // --kind as given: table, semaphore, fair, rw, row, advisory, named
  std::vector<std::string> names;                  // the --lock names, in the order given (one but for a multi_lock)
  std::vector<std::int64_t> fences;                // the same order; empty for kinds without a fencing token
  std::optional<std::chrono::milliseconds> lease;  // --ttl, for the leased kinds
  std::optional<std::int64_t> slot;                // --kind semaphore: the permit's slot
  std::optional<std::string> mode;                 // --kind rw: "shared" or "exclusive"
};

// Whether `entry` (NAME=VALUE) sets one of the variables command_environment() sets or leaves out:
// SQLLOCK_KIND, SQLLOCK_NAME, SQLLOCK_FENCE, SQLLOCK_LEASE_MS, SQLLOCK_SLOT, SQLLOCK_MODE,
// SQLLOCK_NAME_COUNT, SQLLOCK_NAME_<n>, SQLLOCK_FENCE_<n>. (SQLLOCK_DB and the others are the
// user's, and pass through.)
bool is_run_variable(const std::string& entry);

// The command's environment as NAME=VALUE entries: `inherited` (a NULL-terminated array such as
// environ) without the run variables it carries, then these, for `v`:
//   SQLLOCK_KIND       v.kind
//   SQLLOCK_NAME       the (first) lock name
//   SQLLOCK_FENCE      its fencing token (decimal), when the kind has one
//   SQLLOCK_LEASE_MS   the lease in milliseconds, for the leased kinds
//   SQLLOCK_SLOT       a semaphore permit's slot
//   SQLLOCK_MODE       shared or exclusive, for --kind rw
//   with several names also SQLLOCK_NAME_COUNT and SQLLOCK_NAME_<i>, SQLLOCK_FENCE_<i> for i = 1…n
// A variable the kind has no value for is absent, never empty.
std::vector<std::string> command_environment(const char* const* inherited, const run_env_values& v);

}  // namespace sqllock::cli
