// Giving back one level of a hold on a lease slot, with the kind's own statement passed in: the
// release rule of table_lock, fair_lock and rw_lock (through lease_levels) and of a semaphore's
// permit. A multi_lock keeps a rule of its own for a set (lease_set_levels.hpp, release): a name
// whose release fails once others were released is given up, and the set with it; the first name
// it sends (the last by name order) follows this rule.
#pragma once

#include "core/lease/lease_registry.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

// How a release statement found the hold's row.
enum class level_release {
  released,  // it was the hold's, and the level is given back
  lost,      // it was not the hold's any more (taken over after expiry, or released by force)
};

// Runs `statement(view)` for the hold `view` of `slot` — the kind's release statement, true when
// the row was still the hold's — with the caller holding `slot.op` and having checked that the
// registry still has this hold (view.held, its generation). Records the outcome on the registry:
// released (record_released), or lost (mark_lost, which tells the hold's callbacks, and forget).
// The errors:
// - outcome_unknown (the statement was sent, its answer not seen): the slot is forgotten —
//   renewal stops, and if the release did not happen the row runs out with its lease, or the
//   watchdog deletes it as an orphan — and the exception propagates; the caller drops the hold.
// - any other error (no connection, a statement the server refused: nothing changed): propagates
//   with the hold as it was, still renewed, so that the caller can release it again.
template <class Statement>
level_release release_level(lease_registry& registry, lease_slot& slot, const hold_view& view, Statement statement) {
  // Until the outcome is recorded: a renewal that no longer finds the row meanwhile must not call
  // the hold lost (the statement may just have deleted it).
  const releasing_scope releasing(registry, slot);
  bool released = false;
  try {
    released = statement(view);
  } catch (const outcome_unknown&) {
    registry.forget(slot);
    throw;
  }
  if (!released) {
    registry.mark_lost(slot);
    registry.forget(slot);
    return level_release::lost;
  }
  registry.record_released(slot);
  return level_release::released;
}

}  // namespace sqllock::detail
