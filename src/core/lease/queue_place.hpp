// A place in a wait queue (fair_lock, rw_lock) taken by an acquire that is still waiting for its
// turn: given back when the acquire fails, times out or finds the place lost, kept when it holds.
// The queue counterpart of the late-grant undo of the lock rows (lease_grant.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/handle/database_impl.hpp"
#include "core/lease/lease_registry.hpp"
#include "core/lease/queue_store.hpp"

namespace sqllock::detail {

// Which entry a place is: its name, kind, ticket, owner, and the mode of the level this acquire
// added.
struct queue_place_key {
  const std::string& name;
  queue_kind kind;
  std::int64_t ticket;
  const std::string& owner;
  bool write;
};

class queue_place {
 public:
  // The place `key` of `slot`, in the queue whose statements are `sql` on `impl`'s handle. The
  // strings `key` refers to, `impl` and `sql` must outlive it.
  queue_place(database_impl& impl, const queue_sql& sql, std::shared_ptr<lease_slot> slot, queue_place_key key)
      : impl_(impl), sql_(sql), slot_(std::move(slot)), key_(key) {}
  // Gives back the level this acquire added unless kept or given back already; errors are
  // swallowed (the entry then runs out with its lease, or the watchdog deletes it as an orphan).
  ~queue_place();
  queue_place(const queue_place&) = delete;
  queue_place& operator=(const queue_place&) = delete;

  // The acquire holds: the place stays.
  void keep() noexcept { done_ = true; }
  // Gives back the level this acquire added (a timeout, a stop); the owner's other levels on the
  // entry stay. Takes slot.op. The slot is forgotten (no more renewal) when no level is left, or
  // on any error, which propagates.
  void give_back_level() { give_back(false); }
  // Deletes the whole entry (the place was lost: whatever is left of it is stale) and forgets the
  // slot; errors are swallowed.
  void give_back_all() noexcept;

 private:
  void give_back(bool all);

  database_impl& impl_;
  const queue_sql& sql_;
  const std::shared_ptr<lease_slot> slot_;
  const queue_place_key key_;
  bool done_ = false;
};

}  // namespace sqllock::detail
