// What a lease_claim (sqllock/lease_claim.hpp) holds, and how each leased kind makes one from its
// hold. The guard (core/lease/lease_guard.hpp) checks these rows in the caller's transaction.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/lease/lease_registry.hpp"
#include "dialect/lease_table.hpp"
#include "sqllock/database.hpp"
#include "sqllock/lease_claim.hpp"

namespace sqllock::detail {

struct claimed_row {
  std::string resource;
  std::int64_t fence = 0;
};

struct claimed_rows {
  database db;  // the lock's handle: its dialect and lock table (kept alive)
  lease_table table = lease_table::locks;
  std::string what;  // the lock in messages, e.g. "lock 'jobs'"
  std::string owner;
  std::vector<claimed_row> rows;
};

// One row of a hold: the resource and the caller's view of its hold.
struct claim_part {
  std::string resource;
  hold_view view;
};

// The claim of the caller's hold (`owner`'s rows in `table`, one part per row). Throws not_held
// when a part is not held (never acquired, released, or a queue place not yet at its turn), and
// lock_lost when the hold's loss was signalled or its lease ran out by the local clock at `now`.
lease_claim claim_hold(const database& db, lease_table table, const std::string& what, const std::string& owner,
                       std::span<const claim_part> parts, steady::time_point now);

}  // namespace sqllock::detail
