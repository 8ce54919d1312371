// What one database handle holds in the lock table, the permits table and the wait queue, and the
// two threads that keep it: one renews, one ends what was not renewed in time.
//
// Every (store, resource, owner) the handle is acquiring or holding has a lease_slot: a lock row
// (table_lock, multi_lock), a semaphore permit, or a wait-queue entry (fair_lock, rw_lock), which
// is leased while it waits (`queued`) as well as while it holds. Both threads start with the first
// hold. The renewer renews all auto-renew leases of the handle every ttl/3 of the shortest lease,
// in one statement on PostgreSQL and one per table in use elsewhere (dialect/renewal_sql.hpp), so
// renewal traffic does not grow with the number of locks; a hold whose row the renewal no longer
// finds (deleted or taken over) is lost at once. The deadline thread sends no statement: it
// sleeps until the earliest local deadline (lease_deadline below) and marks every hold whose
// deadline passed unconfirmed lost — its loss_signal fires and its on_lost callbacks run there —
// whatever a renewal in flight is doing, so a stalled or silently cut network cannot delay the
// loss; a renewal that confirms a lost hold afterwards does not revive it (its row is deleted as
// an orphan once its on_lost callbacks have returned). All timing reads the handle's clock
// (core/handle/clock.hpp), so unit tests run these rules on a fake one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/handle/clock.hpp"
#include "core/hold/loss_signal.hpp"
#include "core/lease/lease_store.hpp"
#include "core/lease/table_store.hpp"

namespace sqllock::detail {

class database_impl;

// The part of a lease a holder gives up before the server's lease ends: 1/20 of it. It covers a
// difference in rate between this machine's monotonic clock and the server's clock (NTP slews a
// clock by at most 0.05 %) and the time the deadline thread takes to wake and signal, so that
// the holder is told before the server can grant the lock to anyone else.
constexpr std::chrono::milliseconds lease_margin(std::chrono::milliseconds lease) { return lease / 20; }

// When a lease confirmed by a statement sent at `sent` ends for its holder: the server started the
// lease after it received the statement, so no earlier than `sent` + `lease` by its clock.
inline steady::time_point lease_deadline(steady::time_point sent, std::chrono::milliseconds lease) {
  return sent + lease - lease_margin(lease);
}

struct lease_slot {
  lease_slot(const lease_store& st, std::string r, std::string o)
      : store(st), resource(std::move(r)), owner(std::move(o)) {}
  const lease_store& store;  // the kind of row the hold is
  const std::string resource;
  const std::string owner;
  // Serialises this owner's acquire and release round trips, so depth and the row agree even
  // when threads share an explicit owner key.
  std::mutex op;

  // Everything below is guarded by the registry's mutex.
  int pins = 0;
  std::int64_t depth = 0;  // 0: not held
  // A wait-queue entry that is not yet at its turn: renewed like a hold, but not held (a lost one
  // has no callbacks to run: the waiter finds out at its next check and queues again).
  bool queued = false;
  std::int64_t fence = 0;
  std::uint64_t generation = 0;  // increases with every new hold (new fence)
  std::chrono::milliseconds lease{0};
  bool auto_renew = false;
  // A release statement is in flight: a renewal that no longer finds the row must not call the
  // hold lost (the release may just have deleted it).
  bool releasing = false;
  // The on_lost callbacks of this hold's loss are running (on a registry thread). Its row, if the
  // server still has it, is not deleted as an orphan meanwhile: that would let the server grant
  // the lock to another process before a holder that listens only to on_lost has been told.
  int telling = 0;
  steady::time_point recorded_at;   // when the latest acquire result arrived
  steady::time_point confirmed_at;  // when the statement that last confirmed the lease was sent
  // The hold ends here by the local clock.
  steady::time_point deadline() const { return lease_deadline(confirmed_at, lease); }
  // Fired when the current hold is lost (lost == loss.fired()); re-armed by a new hold. Its
  // callbacks (on_lost, by lock object) are set and cleared by the lock objects directly.
  loss_signal loss;
};

// One hold on a slot: the slot, and the generation of the hold (a later hold on the same slot has
// another). What a lock object's levels, or one name of a multi_lock's hold, live on.
struct lease_hold {
  std::shared_ptr<lease_slot> slot;
  std::uint64_t generation = 0;
};

// A consistent copy of a slot's state.
struct hold_view {
  bool held = false;    // depth > 0, not lost and not queued
  bool queued = false;  // a waiting queue entry (depth > 0, not lost, not held)
  std::int64_t depth = 0;
  std::int64_t fence = 0;
  std::uint64_t generation = 0;
  steady::time_point deadline;
  std::stop_token stop;
};

// What every leased lock object answers about the caller's hold from its view (`what` names the
// lock in messages, e.g. "lock 'jobs'"): whether it holds now (held, and before the local
// deadline), its fence (while held), and the token of its loss (while there is a hold, lost or
// not). fence_of and lost_token_of throw not_held otherwise.
inline bool holds_now(const hold_view& v, steady::time_point now) noexcept { return v.held && now < v.deadline; }
std::int64_t fence_of(const hold_view& v, const std::string& what);
std::stop_token lost_token_of(const hold_view& v, const std::string& what);

class lease_registry {
 public:
  explicit lease_registry(database_impl& db);
  ~lease_registry();
  lease_registry(const lease_registry&) = delete;
  lease_registry& operator=(const lease_registry&) = delete;

  // The token renewals match rows by (column holder_session). Unique per handle and process.
  const std::string& session() const noexcept { return session_; }

  // The slot for (store, resource, owner), created on demand and kept until unpinned and not held
  // (a lost hold counts as not held: its row, if still there, is deleted as an orphan).
  std::shared_ptr<lease_slot> pin(const std::string& resource, const std::string& owner, const lease_store& store);
  void unpin(const std::shared_ptr<lease_slot>& slot);

  // Records an acquisition whose statement was sent at `sent`. A fence other than the slot's
  // current one is a new hold: a previous hold that had not been released is marked lost. A new
  // hold that is `queued` is a waiting queue entry (fence = its ticket) until record_granted.
  // Returns the hold's generation.
  std::uint64_t record_acquired(lease_slot& slot, const acquired& got, std::chrono::milliseconds lease, bool auto_renew,
                                steady::time_point sent, bool queued = false);
  // A queued entry of `generation` is at its turn: it holds from now on, with the lease deadline
  // it has (the check that found it at its turn extends nothing). False when that entry was lost
  // or replaced meanwhile, or its deadline has passed (the waiter queues again).
  bool record_granted(lease_slot& slot, std::uint64_t generation);
  // Records that the current hold (or queued entry) now has `depth` levels, without touching its
  // lease: for kinds whose added level does not extend the lease (a wait-queue entry).
  void record_levels(lease_slot& slot, std::int64_t depth);
  // Records the release of one level (depth − 1).
  void record_released(lease_slot& slot);
  // Drops the hold without touching the database (its row is gone or not ours any more).
  void forget(lease_slot& slot);
  // Brackets a release statement (see lease_slot::releasing).
  void set_releasing(lease_slot& slot, bool releasing);
  // Marks the current hold lost and runs its callbacks (on this thread).
  void mark_lost(lease_slot& slot);

  hold_view view(const lease_slot& slot) const;

 private:
  using key = std::tuple<const lease_store*, std::string, std::string>;
  // Losses being told: the callbacks to run and the slots they belong to (each slot's `telling`
  // counted up until they have run).
  struct telling_batch {
    callbacks lost;
    std::vector<std::shared_ptr<lease_slot>> slots;
  };
  // Starts both threads with the first hold. Requires mu_.
  void start_threads();
  // The renewer's loop: a renewal round whenever one is due.
  void renewer(std::stop_token stop);
  // The deadline thread's loop: holds whose deadline passed are lost.
  void deadline_keeper(std::stop_token stop);
  // One renewal round; returns the holds it found lost.
  telling_batch renew_once();
  // The leases of this handle still held, per the renewal statements of the stores in use.
  std::vector<held_lease> renew_stores(lease_table_set tables);
  // Fires the loss of `slot` into `batch`. Requires mu_.
  void fire_into(telling_batch& batch, const std::shared_ptr<lease_slot>& slot);
  telling_batch expire_overdue(steady::time_point now);  // requires mu_
  steady::time_point next_renewal() const;               // requires mu_
  steady::time_point next_deadline() const;              // requires mu_
  bool telling() const;                                  // a slot's loss is being told; requires mu_
  // Runs the batch's callbacks on this (sqllock's own) thread with mu_ released, keeping the
  // handle alive; then its slots are no longer telling (an orphan held back for them is due).
  void run_lost(telling_batch& batch, std::unique_lock<std::mutex>& lock);

  database_impl& db_;
  time_source& clock_;
  const std::string session_;
  mutable std::mutex mu_;
  std::condition_variable_any changed_;
  std::map<key, std::shared_ptr<lease_slot>> slots_;
  steady::time_point retry_at_{};  // after a failed renewal, the earliest next attempt
  // A renewal held back an orphan's delete for a loss being told: once none is, renew again.
  bool orphan_held_back_ = false;
  // A new hold wakes a thread only when it is due before the thread wakes anyway.
  wake_schedule renew_schedule_;
  wake_schedule deadline_schedule_;
  // Started with the first hold; last members: they join first.
  std::jthread renewer_;
  std::jthread deadline_keeper_;
};

// A slot pinned for one scope, such as an acquire attempt: unpinned when the scope ends.
class scoped_pin {
 public:
  scoped_pin(lease_registry& registry, std::shared_ptr<lease_slot> slot)
      : registry_(registry), slot_(std::move(slot)) {}
  ~scoped_pin() { registry_.unpin(slot_); }
  scoped_pin(const scoped_pin&) = delete;
  scoped_pin& operator=(const scoped_pin&) = delete;

 private:
  lease_registry& registry_;
  std::shared_ptr<lease_slot> slot_;
};

// A release statement in flight for one scope (lease_slot::releasing).
class releasing_scope {
 public:
  releasing_scope(lease_registry& registry, lease_slot& slot) : registry_(registry), slot_(slot) {
    registry_.set_releasing(slot_, true);
  }
  ~releasing_scope() { registry_.set_releasing(slot_, false); }
  releasing_scope(const releasing_scope&) = delete;
  releasing_scope& operator=(const releasing_scope&) = delete;

 private:
  lease_registry& registry_;
  lease_slot& slot_;
};

}  // namespace sqllock::detail
