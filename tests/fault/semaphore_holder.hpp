// The semaphore kind of the fault harness: each worker thread holds permits of the run's names
// through sqllock::semaphore (cfg.permits permits each, lease cfg.lease). A permit is a fenced,
// leased section like a table_lock's, but of one slot: its fence increases per (name, slot),
// so the worker keys its history lines and its fenced counter by slot_key(name, slot), which it
// learns from the section (slot_section). Kept here, not in support/lock_kinds: the fault
// harness is the only user that needs the slot of a hold.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "fault/config.hpp"
#include "support/lock_kinds.hpp"

namespace sqllock::fault {

// A section on a pooled connection that holds slot `slot` of its name under fence `fence`
// (sqllock's permits, and the count-then-insert control's rows), with the permit's claim for a
// guard (`claim`; none when empty).
class slot_section : public test::pooled_section {
 public:
  slot_section(const database& db, std::int64_t fence, std::int64_t slot, std::function<lease_claim()> claim = {})
      : pooled_section(db, fence, std::move(claim)), slot_(slot) {}
  std::int64_t slot() const noexcept { return slot_; }

 private:
  std::int64_t slot_;
};

// One semaphore holder per resource (holders[i] of resource_name(i)), over `db`: each hold is a
// try_acquire_for, the section (a slot_section, on_lost from the permit's lost_token) and the
// permit's release(), whose outcome is reported (ok, notheld, lost, unk, err).
std::vector<std::unique_ptr<test::lock_holder>> semaphore_holders(const run_config& cfg, const database& db);

}  // namespace sqllock::fault
