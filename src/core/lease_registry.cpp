#include "core/lease_registry.hpp"

#include <algorithm>
#include <set>

#include "core/database_impl.hpp"
#include "common/identity.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

void run_callbacks(std::vector<std::function<void()>>& callbacks) noexcept {
  for (auto& cb : callbacks) {
    try {
      cb();
    } catch (...) {  // a user callback must not take the watchdog down
    }
  }
}

// A renewal is due a third of the lease after the lease was last confirmed.
steady::time_point renew_due(const lease_slot& s) { return s.deadline - s.lease + s.lease / 3; }

}  // namespace

lease_registry::lease_registry(database_impl& db) : db_(db), session_(random_token()) {}

lease_registry::~lease_registry() {
  if (thread_.joinable()) {
    thread_.request_stop();
    changed_.notify_all();
    thread_.join();
  }
}

std::shared_ptr<lease_slot> lease_registry::pin(const std::string& resource, const std::string& owner) {
  std::lock_guard lock(mu_);
  auto& slot = slots_[key(resource, owner)];
  if (!slot) slot = std::make_shared<lease_slot>(resource, owner);
  ++slot->pins;
  return slot;
}

void lease_registry::unpin(const std::shared_ptr<lease_slot>& slot) {
  std::lock_guard lock(mu_);
  if (--slot->pins == 0 && (slot->depth == 0 || slot->lost)) slots_.erase(key(slot->resource, slot->owner));
}

std::uint64_t lease_registry::record_acquired(lease_slot& slot, const acquired& got, std::chrono::milliseconds lease,
                                              bool auto_renew, steady::time_point sent) {
  std::vector<std::function<void()>> lost;
  std::uint64_t generation = 0;
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (slot.depth > 0 && (slot.fence != got.fence || slot.lost)) {
      if (!slot.lost) lost = lose(slot);
      slot.depth = 0;
    }
    if (slot.depth == 0) {  // a new hold
      slot.fence = got.fence;
      slot.lost = false;
      slot.stop = std::stop_source();
      ++slot.generation;
    }
    slot.depth = got.count;
    slot.lease = lease;
    slot.auto_renew = auto_renew;
    slot.recorded_at = steady::now();
    slot.deadline = sent + lease;
    generation = slot.generation;
    if (!thread_.joinable()) thread_ = std::jthread([this](std::stop_token st) { watchdog(st); });
    const auto due = auto_renew ? std::min(slot.deadline, renew_due(slot)) : slot.deadline;
    wake = due < scheduled_;
  }
  if (wake) changed_.notify_all();
  run_callbacks(lost);
  return generation;
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
  std::lock_guard lock(mu_);
  slot.releasing = releasing;
}

void lease_registry::mark_lost(lease_slot& slot) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mu_);
    if (slot.depth == 0 || slot.lost) return;
    callbacks = lose(slot);
  }
  run_callbacks(callbacks);
}

std::vector<std::function<void()>> lease_registry::lose(lease_slot& slot) {
  slot.lost = true;
  slot.stop.request_stop();
  std::vector<std::function<void()>> out;
  for (auto& [k, cb] : slot.on_lost)
    if (cb) out.push_back(cb);
  return out;
}

hold_view lease_registry::view(const lease_slot& slot) const {
  std::lock_guard lock(mu_);
  hold_view v;
  v.held = slot.depth > 0 && !slot.lost;
  v.depth = slot.depth;
  v.fence = slot.fence;
  v.generation = slot.generation;
  v.deadline = slot.deadline;
  v.stop = slot.stop.get_token();
  return v;
}

void lease_registry::set_on_lost(lease_slot& slot, const void* k, std::function<void()> callback) {
  std::lock_guard lock(mu_);
  slot.on_lost[k] = std::move(callback);
}

void lease_registry::clear_on_lost(lease_slot& slot, const void* k) {
  std::lock_guard lock(mu_);
  slot.on_lost.erase(k);
}

steady::time_point lease_registry::next_wakeup() const {
  auto next = steady::time_point::max();
  for (const auto& [k, s] : slots_) {
    if (s->depth == 0 || s->lost) continue;
    next = std::min(next, s->deadline);
    if (s->auto_renew) next = std::min(next, std::max(renew_due(*s), retry_at_));
  }
  return next;
}

std::vector<std::function<void()>> lease_registry::expire_overdue(steady::time_point now) {
  std::vector<std::function<void()>> out;
  for (auto& [k, s] : slots_) {
    if (s->depth == 0 || s->lost || s->deadline > now) continue;
    auto cbs = lose(*s);
    out.insert(out.end(), cbs.begin(), cbs.end());
  }
  return out;
}

std::vector<std::function<void()>> lease_registry::renew_once() {
  const auto sent = steady::now();
  std::vector<held_lease> held;
  try {
    auto conn = db_.borrow();
    held = table_store(*conn, db_.sql()).renew(session_);
  } catch (const std::exception&) {
    // Try again soon; holds whose deadline passes meanwhile are expired by the caller.
    std::lock_guard lock(mu_);
    retry_at_ = steady::now() + std::chrono::milliseconds(200);
    return {};
  }
  std::set<std::tuple<std::string, std::string, std::int64_t>> confirmed;
  for (auto& h : held) confirmed.emplace(std::move(h.resource), std::move(h.owner), h.fence);

  std::vector<std::function<void()>> lost;
  std::vector<held_lease> orphans;
  {
    std::lock_guard lock(mu_);
    retry_at_ = {};
    for (auto& [k, s] : slots_) {
      if (s->depth == 0 || s->lost || s->releasing || !s->auto_renew || s->recorded_at >= sent) continue;
      if (confirmed.count({s->resource, s->owner, s->fence})) {
        s->deadline = sent + s->lease;
      } else {
        auto cbs = lose(*s);
        lost.insert(lost.end(), cbs.begin(), cbs.end());
      }
    }
    // Rows the handle renews but no hold stands behind: left by an acquire whose reply was lost,
    // or by a hold declared lost while its row lived on (a renewal whose reply came too late).
    // Left alone, the renewal would keep such a row alive with nobody to release it.
    for (const auto& [resource, owner, fence] : confirmed) {
      const auto it = slots_.find(key(resource, owner));
      if (it == slots_.end() || (it->second->lost && it->second->fence == fence)) orphans.push_back({resource, owner, fence});
    }
  }
  for (const auto& o : orphans) {
    try {
      auto conn = db_.borrow();
      table_store(*conn, db_.sql()).release(o.resource, o.owner, o.fence, 1);
    } catch (const std::exception&) {  // its lease runs out on its own
    }
  }
  return lost;
}

void lease_registry::watchdog(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    const auto wake = next_wakeup();
    if (wake == steady::time_point::max()) {
      scheduled_ = wake;
      changed_.wait(lock, stop, [&] { return next_wakeup() != steady::time_point::max(); });
      scheduled_ = steady::time_point::min();
      continue;
    }
    if (steady::now() < wake) {
      scheduled_ = wake;
      changed_.wait_until(lock, stop, wake, [&] { return next_wakeup() < wake; });
      scheduled_ = steady::time_point::min();
      continue;
    }
    bool due = false;
    const auto now = steady::now();
    for (const auto& [k, s] : slots_)
      if (s->depth > 0 && !s->lost && s->auto_renew && renew_due(*s) <= now && retry_at_ <= now) due = true;
    std::vector<std::function<void()>> callbacks;
    if (due) {
      lock.unlock();
      callbacks = renew_once();
      lock.lock();
    }
    auto expired = expire_overdue(steady::now());
    callbacks.insert(callbacks.end(), expired.begin(), expired.end());
    if (!callbacks.empty()) {
      lock.unlock();
      run_callbacks(callbacks);
      lock.lock();
    }
  }
}

}  // namespace sqllock::detail
