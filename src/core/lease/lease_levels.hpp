// The levels a leased lock object holds, by owner, and the rules every kind whose levels live on
// the handle's lease slots applies to them (table_lock, fair_lock, rw_lock): which hold the calling
// owner has, recording a level, giving one back with the kind's release statement, and letting go
// of a slot. What differs per kind is the statement, passed in.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/hold/ownership.hpp"
#include "core/lease/lease_registry.hpp"
#include "core/lease/lease_release.hpp"
#include "sqllock/error.hpp"
#include "sqllock/lock_options.hpp"

namespace sqllock::detail {

class lease_levels {
 public:
  using entry = owner_levels<lease_hold>::entry;

  // `object` identifies the lock object (its on_lost callback on a slot); `who` its owner rules.
  lease_levels(lease_registry& registry, const ownership& who, const void* object)
      : registry_(registry), who_(who), object_(object) {}

  std::optional<entry> find(const std::string& owner) const { return levels_.find(owner); }
  std::int64_t count(const std::string& owner, std::size_t mode) const { return levels_.count(owner, mode); }

  // The owner's hold as the registry sees it; held = false when the slot has moved on to a hold
  // of another generation.
  hold_view current(const std::string& owner) const {
    const auto mine = levels_.find(owner);
    if (!mine) return {};
    auto view = registry_.view(*mine->hold.slot);
    if (view.generation != mine->hold.generation) view.held = false;
    return view;
  }

  // Records one more level of `mode` on the hold (slot, generation). A new hold of the owner pins
  // the slot for this object and sets `on_lost` on it; an earlier hold of the owner that was lost
  // is let go of first (it may live on the same slot: letting go clears this object's callback).
  void record(const std::string& owner, const std::shared_ptr<lease_slot>& slot, std::uint64_t generation,
              std::size_t mode, const lost_callback& on_lost) {
    const auto recorded = levels_.add(owner, lease_hold{slot, generation}, mode, same_hold);
    if (recorded.replaced) let_go(*recorded.replaced);
    if (recorded.is_new) {
      registry_.pin(slot->resource, slot->owner, slot->store);  // the object keeps the slot while it holds it
      if (on_lost) slot->loss.set(object_, on_lost);
    }
  }

  // Gives back one level of `mode` of the owner's hold with `statement(view)`, which returns false
  // when the row is no longer the owner's (lost: `lost_message` is the not_held message), by the
  // rule of release_level (core/lease/lease_release.hpp). Throws not_held when the owner holds no
  // such level, or its hold was lost before; what the statement throws otherwise: after an
  // outcome_unknown the owner's hold is dropped, after any other error it is kept, still renewed,
  // for another release.
  template <class Statement>
  void release(const std::string& owner, std::size_t mode, Statement statement, std::string_view lost_message) {
    const auto mine = levels_.find(owner);
    if (!mine || mine->count[mode] == 0)
      throw not_held(who_.not_held_message(levels_.others_hold(owner) || (mine && mine->total() > 0)));
    const auto& slot = mine->hold.slot;
    std::lock_guard op(slot->op);
    const auto view = registry_.view(*slot);
    if (!view.held || view.generation != mine->hold.generation) {
      drop_one(owner, mode);
      throw not_held(who_.lost_before_release("its lease expired or it was released by force"));
    }
    auto outcome = level_release::released;
    try {
      outcome = release_level(registry_, *slot, view, statement);
    } catch (const outcome_unknown&) {
      drop(owner);
      throw;
    }
    if (outcome == level_release::lost) {
      drop(owner);
      throw not_held(who_.what() + std::string(lost_message));
    }
    drop_one(owner, mode);
  }

  // Gives up the owner's hold locally after a failed release: renewal stops, and the watchdog
  // deletes the row as an orphan if it still exists.
  void abandon(const std::string& owner) {
    if (const auto mine = levels_.find(owner)) registry_.forget(*mine->hold.slot);
    drop(owner);
  }
  void drop(const std::string& owner) {
    if (auto hold = levels_.drop(owner)) let_go(*hold);
  }

  // The release-on-destruction rule (core/hold/ownership.hpp) with `release(owner, mode)`.
  template <class Release>
  void release_everything(Release release) noexcept {
    detail::release_everything(levels_, who_, release, [&](const std::string& owner) { abandon(owner); });
  }

 private:
  static bool same_hold(const lease_hold& a, const lease_hold& b) {
    return a.slot == b.slot && a.generation == b.generation;
  }
  void drop_one(const std::string& owner, std::size_t mode) {
    if (auto hold = levels_.drop_one(owner, mode)) let_go(*hold);
  }
  // The object no longer keeps this slot.
  void let_go(const lease_hold& hold) {
    hold.slot->loss.clear(object_);
    registry_.unpin(hold.slot);
  }

  lease_registry& registry_;
  const ownership& who_;
  const void* const object_;
  owner_levels<lease_hold> levels_;
};

}  // namespace sqllock::detail
