// What a leased kind does with a grant, the same for each: the late-grant rule (a grant counts
// only when it arrives before its lease's local deadline) and the stale re-entry rule.
#pragma once

#include <chrono>
#include <memory>
#include <span>

#include "core/handle/clock.hpp"
#include "core/lease/lease_registry.hpp"

namespace sqllock::detail {

// Runs `undo`, which gives back (part of) a grant of the holds of `slots`. When it throws, those
// holds are marked lost — the owner's counts and the rows' may now disagree, so they are no longer
// trusted (renewal stops; rows still there are ended as orphans) — and the error propagates.
template <class Undo>
void undo_or_mark_lost(lease_registry& registry, std::span<const std::shared_ptr<lease_slot>> slots, Undo&& undo) {
  try {
    undo();
  } catch (...) {
    for (const auto& slot : slots) registry.mark_lost(*slot);
    throw;
  }
}

// Sends one acquire statement (`acquire`: returns the grant, or an empty optional when refused)
// and records in `sent` when it was sent: the server reads its clock for the lease after that,
// so the lease ends no earlier than lease_deadline(sent, lease). A grant that comes back at or
// past that deadline (this process or the network paused between the server's grant and our
// reading of it) may already have run out and been taken over: `undo` gives it back — by owner
// and fence, so it cannot touch anyone else's hold — and it is reported as no grant; when `undo`
// throws, as undo_or_mark_lost.
template <class Acquire, class Undo>
auto acquire_in_time(lease_registry& registry, std::span<const std::shared_ptr<lease_slot>> slots, time_source& clock,
                     std::chrono::milliseconds lease, steady::time_point& sent, Acquire&& acquire, Undo&& undo) {
  sent = clock.now();
  auto got = acquire();
  if (got && clock.now() >= lease_deadline(sent, lease)) {
    undo_or_mark_lost(registry, slots, [&] { undo(*got); });
    got.reset();
  }
  return got;
}

// Whether `got` re-entered a live row of the owner's (count > 1) that no hold of the owner's
// stands behind: the hold was declared lost while its row lived on. That count is not the owner's
// to build on: the caller deletes the row by owner and fence and acquires afresh.
inline bool reentered_a_lost_hold(const lease_registry& registry, const lease_slot& slot, const acquired& got) {
  return got.count > 1 && !registry.view(slot).held;
}

}  // namespace sqllock::detail
