#include "core/lease/lease_registry.hpp"

#include <algorithm>
#include <set>

#include "core/handle/database_impl.hpp"
#include "dialect/renewal_sql.hpp"
#include "common/identity.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// A renewal is due a third of the lease after the lease was last confirmed.
steady::time_point renew_due(const lease_slot& s) { return s.confirmed_at + s.lease / 3; }

// A hold that is live: held or queued, not lost.
bool live(const lease_slot& s) { return s.depth > 0 && !s.loss.fired(); }

}  // namespace

std::int64_t fence_of(const hold_view& v, const std::string& what) {
  if (!v.held) throw not_held("fence(): " + what + " is not held by the caller");
  return v.fence;
}

std::stop_token lost_token_of(const hold_view& v, const std::string& what) {
  if (v.depth == 0) throw not_held("lost_token(): " + what + " is not held by the caller");
  return v.stop;
}

lease_registry::lease_registry(database_impl& db) : db_(db), clock_(db.time()), session_(random_token()) {}

lease_registry::~lease_registry() {
  for (auto* t : {&deadline_keeper_, &renewer_}) {
    if (!t->joinable()) continue;
    t->request_stop();
    changed_.notify_all();
    t->join();
  }
}

void lease_registry::start_threads() {
  if (renewer_.joinable()) return;
  renewer_ = std::jthread([this](std::stop_token st) { renewer(st); });
  deadline_keeper_ = std::jthread([this](std::stop_token st) { deadline_keeper(st); });
}

std::shared_ptr<lease_slot> lease_registry::pin(const std::string& resource, const std::string& owner,
                                                const lease_store& store) {
  std::lock_guard lock(mu_);
  auto& slot = slots_[key(&store, resource, owner)];
  if (!slot) slot = std::make_shared<lease_slot>(store, resource, owner);
  ++slot->pins;
  return slot;
}

void lease_registry::unpin(const std::shared_ptr<lease_slot>& slot) {
  std::lock_guard lock(mu_);
  if (--slot->pins == 0 && slot->telling == 0 && (slot->depth == 0 || slot->loss.fired()))
    slots_.erase(key(&slot->store, slot->resource, slot->owner));
}

std::uint64_t lease_registry::record_acquired(lease_slot& slot, const acquired& got, std::chrono::milliseconds lease,
                                              bool auto_renew, steady::time_point sent, bool queued) {
  callbacks lost;
  std::uint64_t generation = 0;
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (slot.depth > 0 && (slot.fence != got.fence || slot.loss.fired())) {
      lost = slot.loss.fire();  // nothing when it had fired already
      slot.depth = 0;
    }
    if (slot.depth == 0) {  // a new hold
      slot.fence = got.fence;
      slot.queued = queued;
      slot.loss.rearm();
      ++slot.generation;
    }
    slot.depth = got.count;
    slot.lease = lease;
    slot.auto_renew = auto_renew;
    slot.recorded_at = clock_.now();
    slot.confirmed_at = sent;
    generation = slot.generation;
    start_threads();
    wake = deadline_schedule_.due_before(slot.deadline()) ||
           (auto_renew && renew_schedule_.due_before(renew_due(slot)));
  }
  if (wake) changed_.notify_all();
  run_callbacks(lost);
  return generation;
}

bool lease_registry::record_granted(lease_slot& slot, std::uint64_t generation) {
  std::lock_guard lock(mu_);
  if (slot.generation != generation || slot.depth == 0 || slot.loss.fired() || clock_.now() >= slot.deadline())
    return false;
  slot.queued = false;
  return true;
}

void lease_registry::record_levels(lease_slot& slot, std::int64_t depth) {
  std::lock_guard lock(mu_);
  slot.depth = depth;
}

void lease_registry::record_released(lease_slot& slot) {
  std::lock_guard lock(mu_);
  if (slot.depth > 0) --slot.depth;
}

void lease_registry::forget(lease_slot& slot) {
  std::lock_guard lock(mu_);
  slot.depth = 0;
}

void lease_registry::set_releasing(lease_slot& slot, bool releasing) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    slot.releasing = releasing;
    // A release that failed leaves a hold the renewer skipped meanwhile: it is due again.
    wake = !releasing && live(slot) && slot.auto_renew && renew_schedule_.due_before(renew_due(slot));
  }
  if (wake) changed_.notify_all();
}

void lease_registry::mark_lost(lease_slot& slot) {
  callbacks lost;
  {
    std::lock_guard lock(mu_);
    if (slot.depth == 0) return;
    lost = slot.loss.fire();
  }
  run_callbacks(lost);
}

hold_view lease_registry::view(const lease_slot& slot) const {
  std::lock_guard lock(mu_);
  hold_view v;
  v.held = slot.depth > 0 && !slot.loss.fired() && !slot.queued;
  v.queued = slot.depth > 0 && slot.queued && !slot.loss.fired();
  v.depth = slot.depth;
  v.fence = slot.fence;
  v.generation = slot.generation;
  v.deadline = slot.deadline();
  v.stop = slot.loss.token();
  return v;
}

steady::time_point lease_registry::next_renewal() const {
  if (orphan_held_back_ && !telling()) return steady::time_point::min();
  auto next = steady::time_point::max();
  for (const auto& [k, s] : slots_)
    if (live(*s) && s->auto_renew && !s->releasing) next = std::min(next, std::max(renew_due(*s), retry_at_));
  return next;
}

steady::time_point lease_registry::next_deadline() const {
  auto next = steady::time_point::max();
  for (const auto& [k, s] : slots_)
    if (live(*s)) next = std::min(next, s->deadline());
  return next;
}

void lease_registry::fire_into(telling_batch& batch, const std::shared_ptr<lease_slot>& slot) {
  auto cbs = slot->loss.fire();
  if (cbs.empty()) return;
  batch.lost.insert(batch.lost.end(), std::make_move_iterator(cbs.begin()), std::make_move_iterator(cbs.end()));
  ++slot->telling;
  batch.slots.push_back(slot);
}

bool lease_registry::telling() const {
  return std::any_of(slots_.begin(), slots_.end(), [](const auto& kv) { return kv.second->telling > 0; });
}

lease_registry::telling_batch lease_registry::expire_overdue(steady::time_point now) {
  telling_batch out;
  for (auto& [k, s] : slots_)
    if (s->depth > 0 && s->deadline() <= now) fire_into(out, s);
  return out;
}

std::vector<held_lease> lease_registry::renew_stores(lease_table_set tables) {
  const auto steps = renewal_statements(db_.dialect(), db_.options().table, tables);
  auto conn = db_.borrow();
  const value params[] = {session_};
  std::vector<held_lease> held;
  for (const auto& step : *steps) {
    auto res = run_lease_statement(*conn, db_.dialect(), step.statement, params);
    if (!step.readback.empty()) res = run_lease_statement(*conn, db_.dialect(), step.readback, params);
    auto rows = read_held_leases(res, step.tag ? &lease_store_of_tag(step.tag) : nullptr);
    held.insert(held.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  }
  return held;
}

lease_registry::telling_batch lease_registry::renew_once() {
  const auto sent = clock_.now();
  lease_table_set tables;
  {
    std::lock_guard lock(mu_);
    orphan_held_back_ = false;
    for (const auto& [k, s] : slots_) {
      if (s->depth == 0 || s->loss.fired() || !s->auto_renew) continue;
      tables.add(s->store.table());
    }
  }
  std::vector<held_lease> held;
  try {
    held = renew_stores(tables.empty() ? lease_table::locks : tables);
  } catch (const std::exception&) {
    // Try again soon; holds whose deadline passes meanwhile are expired by the caller.
    std::lock_guard lock(mu_);
    retry_at_ = clock_.now() + std::chrono::milliseconds(200);
    return {};
  }
  std::set<std::tuple<const lease_store*, std::string, std::string, std::int64_t>> confirmed;
  for (auto& h : held) confirmed.emplace(h.store, std::move(h.resource), std::move(h.owner), h.fence);

  telling_batch lost;
  std::vector<held_lease> orphans;
  {
    std::lock_guard lock(mu_);
    retry_at_ = {};
    const auto now = clock_.now();
    for (auto& [k, s] : slots_) {
      if (s->depth == 0 || s->loss.fired() || s->releasing || !s->auto_renew || s->recorded_at >= sent) continue;
      // A confirmation that arrives after the deadline (before the deadline thread woke) comes too
      // late as well: holds() has said false already, and must not say true again.
      if (s->deadline() > now && confirmed.count({&s->store, s->resource, s->owner, s->fence}))
        s->confirmed_at = sent;
      else
        fire_into(lost, s);
    }
    // Rows the handle renews but no hold stands behind: left by an acquire whose reply was lost,
    // or by a hold declared lost while its row lived on (a renewal whose reply came too late).
    // Left alone, the renewal would keep such a row alive with nobody to release it.
    // A lost hold whose holder is still being told keeps its row until the telling is done.
    for (const auto& [store, resource, owner, fence] : confirmed) {
      const auto it = slots_.find(key(store, resource, owner));
      if (it != slots_.end() && it->second->telling > 0) {
        orphan_held_back_ = true;
        continue;
      }
      if (it == slots_.end() || (it->second->loss.fired() && it->second->fence == fence))
        orphans.push_back({resource, owner, fence, store});
    }
  }
  for (const auto& o : orphans) {
    try {
      auto conn = db_.borrow();
      o.store->end_orphan(db_, *conn, o);
    } catch (const std::exception&) {  // its lease runs out on its own
    }
  }
  return lost;
}

void lease_registry::run_lost(telling_batch& batch, std::unique_lock<std::mutex>& lock) {
  if (batch.slots.empty()) return;
  lock.unlock();
  run_callbacks_keeping(batch.lost, db_.keep_alive());
  lock.lock();
  for (const auto& s : batch.slots) {
    --s->telling;
    if (s->telling == 0 && s->pins == 0) slots_.erase(key(&s->store, s->resource, s->owner));
  }
  if (orphan_held_back_ && !telling()) changed_.notify_all();
}

void lease_registry::renewer(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    const auto due = next_renewal();
    if (clock_.now() < due) {
      // Until then, a hold due earlier, or a stop (a spurious wake just looks again).
      renew_schedule_.sleep(clock_, changed_, lock, stop, due);
      continue;
    }
    lock.unlock();
    auto lost = renew_once();  // may take as long as the network does: deadlines are not its job
    lock.lock();
    run_lost(lost, lock);
  }
}

void lease_registry::deadline_keeper(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    const auto due = next_deadline();
    if (clock_.now() < due) {
      deadline_schedule_.sleep(clock_, changed_, lock, stop, due);
      continue;
    }
    auto lost = expire_overdue(clock_.now());
    run_lost(lost, lock);
  }
}

}  // namespace sqllock::detail
