// sqllock::table_lock: acquisition, re-entry, release and waiting. SQL lives in the dialect and
// runs through table_store; renewal and loss detection live in lease_registry.
#include "sqllock/table_lock.hpp"

#include <iostream>
#include <map>
#include <thread>

#include "core/backoff.hpp"
#include "core/database_impl.hpp"
#include "common/identity.hpp"
#include "common/lock_name.hpp"
#include "core/table_store.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {

class table_lock_state {
 public:
  table_lock_state(const database& db, std::string_view name, table_lock_options options)
      : db_(db), impl_(database_access::impl(db)), name_(name), options_(std::move(options)) {
    validate_lock_name(name_);
    validate_ttl(options_.ttl);
    if (!options_.owner.empty() && options_.owner.size() > 128)
      throw invalid_argument("table_lock_options::owner is longer than 128 bytes");
    if (!options_.on_unlock_error) {
      options_.on_unlock_error = [name = name_](const std::exception& e) {
        std::cerr << "sqllock: unlock of '" << name << "' failed: " << e.what() << '\n';
      };
    }
  }

  ~table_lock_state() {
    std::unique_lock lock(mu_);
    while (!mine_.empty()) {
      auto it = mine_.begin();
      const std::string owner = it->first;
      lock.unlock();
      try {
        release_as(owner);
      } catch (const std::exception& e) {
        options_.on_unlock_error(e);
        abandon(owner);
      }
      lock.lock();
    }
  }

  bool attempt() {
    const std::string owner = owner_token();
    auto& registry = impl_.registry();
    auto slot = registry.pin(name_, owner);
    struct unpin_guard {
      lease_registry& r;
      std::shared_ptr<lease_slot>& s;
      ~unpin_guard() { r.unpin(s); }
    } guard{registry, slot};

    std::lock_guard op(slot->op);
    std::optional<acquired> taken;
    steady::time_point sent;
    {
      auto conn = impl_.borrow();
      table_store store(*conn, impl_.sql());
      const acquire_request request{name_, owner, registry.session(), options_.ttl, options_.auto_renew};
      // One acquire statement. A grant that comes back a full ttl after it was sent (this
      // process or the network paused between the server's grant and our reading of it) may
      // already have run out and been taken over: it is undone — the release matches owner,
      // fence and count, so it cannot touch anyone else's hold — and reported as no grant.
      const auto acquire_in_time = [&] {
        sent = steady::now();  // the server reads its clock for the lease after this
        auto got = store.acquire(request);
        if (got && steady::now() >= sent + options_.ttl) {
          try {
            store.release(name_, owner, got->fence, got->count);
          } catch (...) {
            registry.mark_lost(*slot);  // our counts and the row's may now disagree: stop trusting the hold
            throw;
          }
          got.reset();
        }
        return got;
      };
      taken = acquire_in_time();
      if (taken && taken->count > 1 && !registry.view(*slot).held) {
        // We re-entered a live row of ours that no hold of ours stands behind (its hold was
        // declared lost while the row lived on). Its count is not ours to build on: delete it by
        // owner and fence, and take the lock afresh.
        store.release(name_, owner, taken->fence, 1);
        taken = acquire_in_time();
      }
      if (!taken) return false;
    }
    const auto generation = registry.record_acquired(*slot, *taken, options_.ttl, options_.auto_renew, sent);

    std::lock_guard lock(mu_);
    auto& mine = mine_[owner];
    if (!mine.slot || mine.generation != generation) {
      if (mine.slot) registry.unpin(mine.slot);  // an earlier hold of ours was lost
      mine = {slot, generation, 0};
      registry.pin(name_, owner);  // the object keeps the slot while it holds it
      if (options_.on_lost) registry.set_on_lost(*slot, this, options_.on_lost);
    }
    ++mine.count;
    return true;
  }

  bool try_until(std::optional<steady::time_point> deadline) {
    if (attempt()) return true;
    auto& wakeups = impl_.wakeups();
    struct interest_guard {
      wakeup_hub& hub;
      const std::string& resource;
      ~interest_guard() { hub.leave(resource); }
    } interest{wakeups, name_};
    wakeups.join(name_);
    // Back off with jitter, but never sleep past the deadline or past the moment the holder's
    // lease runs out; where releases are announced (PostgreSQL), wake at once on a release.
    backoff delays(std::chrono::milliseconds(5), std::chrono::milliseconds(500));
    while (true) {
      const auto ticket = wakeups.ticket(name_);  // before the attempt: no release can slip by
      if (attempt()) return true;
      const auto now = steady::now();
      if (deadline && now >= *deadline) return false;
      auto sleep = std::chrono::duration_cast<steady::duration>(delays.next());
      {
        auto conn = impl_.borrow();
        if (auto left = table_store(*conn, impl_.sql()).lease_remaining(name_))
          sleep = std::min<steady::duration>(sleep, *left + std::chrono::milliseconds(1));
      }
      if (deadline) sleep = std::min<steady::duration>(sleep, *deadline - now);
      if (ticket)
        wakeups.wait(name_, *ticket, now + sleep);
      else
        std::this_thread::sleep_for(sleep);
    }
  }

  void release_as(const std::string& owner) {
    auto& registry = impl_.registry();
    std::shared_ptr<lease_slot> slot;
    std::uint64_t generation = 0;
    {
      std::lock_guard lock(mu_);
      if (auto it = mine_.find(owner); it != mine_.end()) {
        slot = it->second.slot;
        generation = it->second.generation;
      }
    }
    if (!slot) throw not_held(not_held_message());
    std::lock_guard op(slot->op);
    const auto view = registry.view(*slot);
    if (!view.held || view.generation != generation) {
      drop_one(owner);
      throw not_held("lock '" + name_ + "' was lost before this release (its lease expired or it was "
                     "released by force); the work it guarded may have overlapped another holder's");
    }
    bool released = false;
    registry.set_releasing(*slot, true);
    struct releasing_guard {
      lease_registry& r;
      lease_slot& s;
      ~releasing_guard() { r.set_releasing(s, false); }
    } releasing{registry, *slot};
    try {
      auto conn = impl_.borrow();
      released = table_store(*conn, impl_.sql()).release(name_, owner, view.fence, view.depth);
    } catch (const outcome_unknown&) {
      // Stop renewing: if the release did not happen, the watchdog finds the row orphaned.
      registry.forget(*slot);
      drop(owner);
      throw;
    }
    if (!released) {
      registry.mark_lost(*slot);
      registry.forget(*slot);
      drop(owner);
      throw not_held("lock '" + name_ + "' is no longer held by this owner: its lease expired and another "
                     "owner took it over (or it was released by force)");
    }
    registry.record_released(*slot);
    drop_one(owner);
  }

  hold_view current() const {
    std::shared_ptr<lease_slot> slot;
    std::uint64_t generation;
    {
      std::lock_guard lock(mu_);
      auto it = mine_.find(owner_token());
      if (it == mine_.end()) return {};
      slot = it->second.slot;
      generation = it->second.generation;
    }
    auto view = impl_.registry().view(*slot);
    if (view.generation != generation) view.held = false;
    return view;
  }

  const std::string& name() const noexcept { return name_; }
  const table_lock_options& options() const noexcept { return options_; }

 private:
  struct acquisition {
    std::shared_ptr<lease_slot> slot;
    std::uint64_t generation = 0;
    std::int64_t count = 0;  // acquisitions through this object not yet released
  };

  std::string owner_token() const { return current_owner(); }

 public:
  // The owner token of the calling thread (or of the explicit owner key).
  std::string current_owner() const {
    const auto& session = impl_.registry().session();
    if (!options_.owner.empty()) return session + "/k:" + options_.owner;
    return session + "/t:" + current_thread_text();
  }

  // Gives up the owner's hold locally after a failed release: renewal stops, and the watchdog
  // deletes the row as an orphan if it still exists.
  void abandon(const std::string& owner) {
    std::shared_ptr<lease_slot> slot;
    {
      std::lock_guard lock(mu_);
      if (auto it = mine_.find(owner); it != mine_.end()) slot = it->second.slot;
    }
    if (slot) impl_.registry().forget(*slot);
    drop(owner);
  }

 private:
  std::string not_held_message() const {
    std::lock_guard lock(mu_);
    if (!mine_.empty() && options_.owner.empty())
      return "lock '" + name_ + "' is held by another thread of this object, not by the calling thread; "
             "unlock it from the thread that locked it, or set table_lock_options::owner";
    return "lock '" + name_ + "' is not held by the caller (unlock without lock, or more unlocks than locks)";
  }

  void drop_one(const std::string& owner) {
    std::lock_guard lock(mu_);
    auto it = mine_.find(owner);
    if (it == mine_.end()) return;
    if (--it->second.count <= 0) erase(it);
  }
  void drop(const std::string& owner) {
    std::lock_guard lock(mu_);
    if (auto it = mine_.find(owner); it != mine_.end()) erase(it);
  }
  void erase(std::map<std::string, acquisition>::iterator it) {  // requires mu_
    auto& registry = impl_.registry();
    registry.clear_on_lost(*it->second.slot, this);
    registry.unpin(it->second.slot);
    mine_.erase(it);
  }

  database db_;  // keeps the handle (and its watchdog) alive while this lock exists
  database_impl& impl_;
  const std::string name_;
  table_lock_options options_;
  mutable std::mutex mu_;
  std::map<std::string, acquisition> mine_;  // by owner token
};

}  // namespace detail

table_lock::table_lock(const database& db, std::string_view name, table_lock_options options)
    : state_(std::make_unique<detail::table_lock_state>(db, name, std::move(options))) {}

table_lock::~table_lock() = default;

void table_lock::lock() { state_->try_until(std::nullopt); }

bool table_lock::try_lock() { return state_->attempt(); }

bool table_lock::try_lock_until_steady(std::chrono::steady_clock::time_point deadline) {
  return state_->try_until(deadline);
}

void table_lock::unlock() noexcept {
  try {
    release();
  } catch (const std::exception& e) {
    try {
      state_->options().on_unlock_error(e);
    } catch (...) {
    }
  }
}

void table_lock::release() {
  state_->release_as(state_->current_owner());
}

bool table_lock::holds() const noexcept {
  try {
    const auto v = state_->current();
    return v.held && std::chrono::steady_clock::now() < v.deadline;
  } catch (...) {
    return false;
  }
}

std::int64_t table_lock::fence() const {
  const auto v = state_->current();
  if (!v.held) throw not_held("fence(): lock '" + name() + "' is not held by the caller");
  return v.fence;
}

std::stop_token table_lock::lost_token() const {
  const auto v = state_->current();
  if (v.depth == 0) throw not_held("lost_token(): lock '" + name() + "' is not held by the caller");
  return v.stop;
}

const std::string& table_lock::name() const noexcept { return state_->name(); }

}  // namespace sqllock
