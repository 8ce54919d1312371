// The levels a lock object holds on a set of lease slots, one per name, taken and given back
// together: the set counterpart of lease_levels, for a multi_lock. Every name is an ordinary lock
// row (lock_rows_store) with the slot a table_lock of that name and owner uses, and is given back
// with table_lock's release statement (table_store::release). An owner's hold is the set of its
// names' holds (slot, generation) and their one loss signal; its levels are counted in mode 0.
//
// Released by a rule of its own for a set (release): a name whose release fails once others were
// released, or lost, is given up and the set with it; until then lease_release.hpp's rule holds
// (a failure that changed nothing keeps the set held, still renewed, for another release).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/handle/clock.hpp"
#include "core/hold/joined_loss.hpp"
#include "core/hold/ownership.hpp"
#include "core/lease/lease_registry.hpp"
#include "core/lease/table_store.hpp"
#include "sqllock/lock_options.hpp"

namespace sqllock::detail {

class database_impl;

// What one owner's levels on a set live on: a part per name (in name order) and their joined loss
// signal, which any part's loss stops.
struct lease_set_hold {
  std::vector<lease_hold> parts;
  std::shared_ptr<joined_loss> loss;
};

// Locks the op mutexes of `slots` in their order (the names' order, as every multi_lock takes
// them, so two sets of one owner cannot deadlock): this owner's acquires and releases of a name
// take turns. Held until the returned locks are destroyed.
std::vector<std::unique_lock<std::mutex>> take_turns(std::span<const std::shared_ptr<lease_slot>> slots);

class lease_set_levels {
 public:
  // The calling owner's hold as the registry sees it now.
  struct set_view {
    bool recorded = false;  // the owner has levels here (held, or lost and not yet released)
    bool held = false;      // every part is held
    std::vector<hold_view> parts;
    std::shared_ptr<joined_loss> loss;
  };

  // `names`: the set's names, sorted by bytes; they must outlive this object. `object` identifies
  // the lock object (its on_lost callback on the slots); `who` its owner rules. Statements run on
  // connections borrowed from `db`, whose registry keeps the slots.
  lease_set_levels(database_impl& db, const std::vector<std::string>& names, const ownership& who, const void* object)
      : db_(db), names_(names), who_(who), object_(object) {}

  // The levels `owner` holds on the set.
  std::int64_t count(const std::string& owner) const { return levels_.count(owner, 0); }

  // The owner's hold, part by part; a part is not held when its slot has moved on to a hold of
  // another generation. Empty (recorded = false) when the owner has no levels here.
  set_view current(const std::string& owner) const;

  // Records a granted attempt: `got` (a grant per name, in name order) on `slots` (the names'
  // slots, in name order) with record_acquired, for a statement sent at `sent`, and one more level
  // of the owner on that set. A new hold pins the slots for this object, and with `on_lost` sets a
  // callback on every slot that tells the user of the hold's loss once. An earlier hold of the
  // owner that was lost is replaced: its levels died with it, and a name it shares with the new
  // hold (same slot and generation) gives its dead levels back on that row (one release statement
  // each, or the name is marked lost when that fails or finds the row gone); then it is let go of.
  // The caller holds the slots' turns (take_turns) and keeps them pinned. Throws only what
  // allocation throws (a give-back that fails marks its name lost instead).
  void record(const std::string& owner, std::span<const std::shared_ptr<lease_slot>> slots,
              const std::vector<acquired>& got, std::chrono::milliseconds lease, bool auto_renew,
              steady::time_point sent, const lost_callback& on_lost);

  // Gives back one level of the owner's set: every name's, in reverse name order, under the
  // names' turns (taken here: the caller holds none of them). A name whose hold is no longer the
  // set's (lost, or taken over) is skipped; a name whose row is no longer the owner's is marked
  // lost. The level is dropped — and with the last one the set let go of — unless the first
  // release it sends (the last name's) fails with an error that changed nothing (not
  // outcome_unknown, no name given back or lost yet): that error propagates with the set held as it was, still renewed, for
  // another release. Any later failure, or an outcome_unknown, gives that name up (marked lost:
  // renewal stops, and its row, if still there, is deleted as an orphan) while the others are
  // released, and the first such error is thrown after the level is dropped. Otherwise throws
  // not_held when a name was lost (the other names were released), or when the owner holds
  // nothing here.
  void release(const std::string& owner);

  // Gives up the owner's hold locally after a failed release: renewal of every name stops, and the
  // watchdog deletes the rows still there as orphans.
  void abandon(const std::string& owner);

  // The release-on-destruction rule (core/hold/ownership.hpp) with release(owner): for the lock
  // object's destructor.
  void release_everything() noexcept;

 private:
  // The owner's hold `old` (with its levels) was lost and is replaced by `now`: its levels died
  // with it. But a name it did not lose is part of both (same slot, same generation), and its row
  // still counts the dead levels: gives those back, or the row would outlive the new hold, never
  // below the new level (depth 1). A name that cannot be given back (an error, or its row is no
  // longer the owner's) is marked lost, and its row is then deleted as an orphan. Throws nothing
  // of its own. The caller holds the names' turns.
  void forget_levels(const std::string& owner, const owner_levels<lease_set_hold>::entry& old,
                     const lease_set_hold& now);
  // Drops one level of the owner (drop_one) or all of them (drop); with the last, lets go of the
  // set.
  void drop_one(const std::string& owner);
  void drop(const std::string& owner);
  // The object no longer keeps these slots: clears its callbacks on them and unpins them.
  void let_go(const lease_set_hold& hold);

  database_impl& db_;
  const std::vector<std::string>& names_;  // sorted by bytes
  const ownership& who_;
  const void* const object_;
  owner_levels<lease_set_hold> levels_;
};

}  // namespace sqllock::detail
