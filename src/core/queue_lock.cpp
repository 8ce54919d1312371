// sqllock::fair_lock and sqllock::rw_lock: places in the wait queue (dialect/queue_sql.hpp), taken,
// waited on and given back. SQL lives in the dialect and runs through queue_store; the lease of a
// place, waiting or holding, is renewed and watched by lease_registry.
//
// One acquire: enqueue (a new place with a ticket, or one more level on the owner's place), then
// check until the place is at its turn (retry_wait: NOTIFY on PostgreSQL, backoff elsewhere that
// starts again whenever the queue moved up, never sleeping past the first blocker's lease end), then the hold is recorded. A place lost
// while waiting (its lease ran out while this process or the database was unreachable, or it was
// released by force) is taken again at the back of the queue. A timeout gives the place back.
#include "sqllock/fair_lock.hpp"
#include "sqllock/rw_lock.hpp"

#include <optional>

#include "common/lock_name.hpp"
#include "core/clock.hpp"
#include "core/database_impl.hpp"
#include "core/lease_levels.hpp"
#include "core/ownership.hpp"
#include "core/queue_store.hpp"
#include "core/retry_wait.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {
namespace {

constexpr std::size_t kWrite = 0;  // owner_levels mode of write (exclusive) levels
constexpr std::size_t kRead = 1;   // and of read (shared) levels

std::size_t mode_of(bool write) { return write ? kWrite : kRead; }

}  // namespace

// The options of both kinds, which have the same fields.
struct queue_lock_settings {
  std::chrono::milliseconds ttl;
  bool auto_renew;
  std::string owner;
  lost_callback on_lost;
  unlock_error_callback on_unlock_error;

  template <class Options>
  static queue_lock_settings of(Options o) {
    return {o.ttl, o.auto_renew, std::string(o.owner), std::move(o.on_lost), std::move(o.on_unlock_error)};
  }
};

class queue_lock_state {
 public:
  queue_lock_state(const database& db, std::string_view name, queue_kind kind, queue_lock_settings settings)
      : db_(db), impl_(database_access::impl(db)), name_(checked(std::string(name), settings.ttl)), kind_(kind),
        store_(queue_entries_store(kind)), sql_(queue_statements(impl_.dialect(), impl_.options().table)),
        settings_(std::move(settings)),
        who_(kind == queue_kind::fair ? "fair_lock_options" : "rw_lock_options",
             (kind == queue_kind::fair ? "fair lock '" : "read-write lock '") + name_ + "'", settings_.owner,
             settings_.on_unlock_error),
        levels_(impl_.registry(), who_, this) {}

  ~queue_lock_state() {
    levels_.release_everything([&](const std::string& owner, std::size_t mode) { release_as(owner, mode == kWrite); });
  }

  queue_lock_state(const queue_lock_state&) = delete;
  queue_lock_state& operator=(const queue_lock_state&) = delete;

  // One level of `write` or read mode for the calling owner, waiting until `deadline` (none:
  // forever) or a stop on `stop`. False when either came first (the place is given back).
  bool acquire(bool write, std::optional<time_source::time_point> deadline, std::stop_token stop = {}) {
    const std::string owner = current_owner();
    auto& registry = impl_.registry();
    if (const auto mine = levels_.find(owner)) {
      const auto v = registry.view(*mine->hold.slot);
      if (v.held && v.generation == mine->hold.generation) {
        if (write && mine->count[kWrite] == 0) throw invalid_argument(upgrade_refused());
        if (add_level(owner, *mine, write)) return true;
        // The place was lost meanwhile: a new one below.
      }
    }
    auto slot = registry.pin(name_, owner, store_);
    const scoped_pin pinned(registry, slot);
    // A place lost (released by force, or its lease ran out) is taken again at the back, until
    // the deadline.
    const auto queue_again = [&] { return (!deadline || impl_.time().now() < *deadline) && !stop.stop_requested(); };
    while (true) {
      queue_entry got;
      time_source::time_point sent;
      hold_view before;
      bool existing = false;
      bool vanished = false;  // released by force as it was taken
      for (int orphans = 0;; ++orphans) {
        std::lock_guard op(slot->op);
        auto conn = impl_.borrow();
        sent = impl_.time().now();  // the server reads its clock for the lease after this
        const auto entry = store(*conn).enqueue(request(owner, write));
        if (!entry) {
          vanished = true;
          break;
        }
        got = *entry;
        // A level added to the owner's live place, taken through another object of the same owner
        // on this handle, keeps that place's lease (and an upgrade of it is refused).
        before = registry.view(*slot);
        existing = (before.held || before.queued) && before.fence == got.ticket;
        if (existing || (got.levels() == 1 && got.writes == (write ? 1 : 0))) break;
        // Otherwise the enqueue met a live place of this owner that no hold of ours stands behind:
        // left by an acquire that failed after its place was committed (a lost reply, a check and
        // a give-back that both failed) and not yet run out. Its levels are nobody's: delete it
        // and queue afresh, at the back (joining it would keep a level that no release gives back).
        store(*conn).leave(name_, kind_, got.ticket, owner);
        if (orphans == 2)
          throw backend_error(who_.what() +
                                  ": the queue keeps returning a place of this owner that no hold stands "
                                  "behind; retry the call",
                              "", 0);
      }
      if (vanished) {
        if (!queue_again()) return false;
        continue;
      }
      // The owner's place is a reader's, held through another object of this owner: an upgrade.
      // The enqueue changed nothing.
      if (write && got.writes == 0) throw invalid_argument(upgrade_refused());
      if (existing) registry.record_levels(*slot, got.levels());
      const auto generation = existing
                                  ? before.generation
                                  : registry.record_acquired(*slot, acquired{got.levels(), got.ticket}, settings_.ttl,
                                                             settings_.auto_renew, sent, /*queued=*/true);
      place waiting(*this, slot, owner, got.ticket, write);
      bool lost_place = false;
      std::optional<std::chrono::milliseconds> wait;
      std::optional<std::int64_t> blockers;  // ahead at the last check
      bool moved = false;                    // fewer than at the check before
      const bool turn = retry_until(
          impl_, name_, deadline,
          {.attempt =
               [&] {
                 const auto v = registry.view(*slot);
                 if (v.generation != generation || (!v.held && !v.queued)) return lost_place = true;
                 if (v.held) return true;  // at its turn already (the owner holds through another object)
                 queue_turn t;
                 {
                   std::lock_guard op(slot->op);
                   auto conn = impl_.borrow();
                   t = store(*conn).check(name_, kind_, got.ticket, owner);
                 }
                 wait = t.wait;
                 moved = blockers && t.blockers < *blockers;
                 blockers = t.blockers;
                 if (!t.mine) return lost_place = true;
                 if (!t.holds()) return false;
                 // A verdict read after the place's lease deadline cannot be trusted: queue again.
                 if (!registry.record_granted(*slot, generation)) return lost_place = true;
                 return true;
               },
           .lease_remaining = [&] { return wait; },
           // Where no release is announced, a waiter polls as often as its queue moves: the head
           // of a queue that moves every few milliseconds looks again within a few milliseconds.
           .progressed = [&] { return moved; }},
          stop);
      if (lost_place) {
        waiting.give_back_all();
        if (!queue_again()) return false;
        continue;
      }
      if (!turn) {
        waiting.give_back_level();
        return false;
      }
      waiting.keep();
      levels_.record(owner, slot, generation, mode_of(write), settings_.on_lost);
      return true;
    }
  }

  void release_as(const std::string& owner, bool write) {
    levels_.release(
        owner, mode_of(write),
        [&](const hold_view& view) {
          auto conn = impl_.borrow();
          return store(*conn).release(name_, kind_, view.fence, owner, write).has_value();
        },
        " is no longer held by this owner: its lease expired and its place was deleted (or it was released "
        "by force)");
  }

  hold_view current() const { return levels_.current(current_owner()); }

  // Levels of the calling owner in `write` or read mode.
  std::int64_t levels(bool write) const { return levels_.count(current_owner(), mode_of(write)); }

  const std::string& name() const noexcept { return name_; }
  const ownership& who() const noexcept { return who_; }
  const time_source& time() const noexcept { return impl_.time(); }

  // The owner token of the calling thread (or of the explicit owner key): scoped to the handle.
  std::string current_owner() const { return impl_.registry().session() + "/" + who_.owner(); }

 private:
  // A place taken by an acquire that is still waiting: given back when the acquire fails or times
  // out, kept when it holds.
  class place {
   public:
    place(queue_lock_state& lock, std::shared_ptr<lease_slot> slot, const std::string& owner, std::int64_t ticket,
          bool write)
        : lock_(lock), slot_(std::move(slot)), owner_(owner), ticket_(ticket), write_(write) {}
    ~place() {
      if (!done_) give_back_quietly(false);
    }
    place(const place&) = delete;
    place& operator=(const place&) = delete;

    void keep() noexcept { done_ = true; }
    // The level this acquire added (the timeout); its other levels, if any, stay.
    void give_back_level() { give_back(false); }
    // The whole place (lost: whatever is left of it is stale).
    void give_back_all() { give_back_quietly(true); }

   private:
    void give_back(bool all) {
      done_ = true;
      auto& registry = lock_.impl_.registry();
      std::lock_guard op(slot_->op);
      const releasing_scope releasing(registry, *slot_);
      try {
        auto conn = lock_.impl_.borrow();
        auto st = lock_.store(*conn);
        if (all) {
          st.leave(lock_.name_, lock_.kind_, ticket_, owner_);
          registry.forget(*slot_);
          return;
        }
        const auto left = st.release(lock_.name_, lock_.kind_, ticket_, owner_, write_);
        if (left && left->levels() > 0)
          registry.record_released(*slot_);
        else
          registry.forget(*slot_);
      } catch (...) {
        // Stop renewing: the entry runs out with its lease, or the watchdog deletes it as an orphan.
        registry.forget(*slot_);
        throw;
      }
    }
    void give_back_quietly(bool all) noexcept {
      try {
        give_back(all);
      } catch (...) {
      }
    }

    queue_lock_state& lock_;
    const std::shared_ptr<lease_slot> slot_;
    const std::string& owner_;
    const std::int64_t ticket_;
    const bool write_;
    bool done_ = false;
  };

  static const std::string& checked(const std::string& name, std::chrono::milliseconds ttl) {
    validate_lock_name(name);
    validate_ttl(ttl);
    return name;
  }

  queue_store store(connection& conn) const { return queue_store(conn, *sql_, impl_.sql().wakeup_channel); }

  queue_request request(const std::string& owner, bool write) const {
    return {name_, kind_, owner, impl_.registry().session(), settings_.ttl, settings_.auto_renew, write};
  }

  std::string upgrade_refused() const {
    return who_.what() +
           ": the calling owner holds it for reading and asked to write; an upgrade can only "
           "deadlock (two readers upgrading wait for each other): release the read lock, then lock()";
  }

  // One more level on the owner's held place. False when the place turned out to be lost (its
  // entry had run out and the enqueue made a new one, now given back; or it was released by force
  // as the level was added).
  bool add_level(const std::string& owner, const lease_levels::entry& mine, bool write) {
    auto& registry = impl_.registry();
    const auto& slot = mine.hold.slot;
    queue_entry got;
    {
      std::lock_guard op(slot->op);
      auto conn = impl_.borrow();
      const auto entry = store(*conn).enqueue(request(owner, write));
      if (!entry || entry->ticket != registry.view(*slot).fence) {
        if (entry) store(*conn).leave(name_, kind_, entry->ticket, owner);
        registry.mark_lost(*slot);
        registry.forget(*slot);
        levels_.drop(owner);
        return false;
      }
      got = *entry;
    }
    if (write && got.writes == 0) throw invalid_argument(upgrade_refused());
    registry.record_levels(*slot, got.levels());  // an added level keeps the place's lease
    levels_.record(owner, slot, mine.hold.generation, mode_of(write), settings_.on_lost);
    return true;
  }

  database db_;  // keeps the handle (and its watchdog) alive while this lock exists
  database_impl& impl_;
  const std::string name_;
  const queue_kind kind_;
  const lease_store& store_;
  const std::shared_ptr<const queue_sql> sql_;
  const queue_lock_settings settings_;
  const ownership who_;
  lease_levels levels_;
};

namespace {

bool holds_mode(const queue_lock_state& s, bool write_only, bool read_only) noexcept {
  try {
    if (!holds_now(s.current(), s.time().now())) return false;
    if (write_only) return s.levels(true) > 0;
    if (read_only) return s.levels(false) > 0;
    return true;
  } catch (...) {
    return false;
  }
}

std::int64_t levels_of(const queue_lock_state& s, bool write) noexcept {
  try {
    return s.levels(write);
  } catch (...) {
    return 0;
  }
}

}  // namespace
}  // namespace detail

// ---- fair_lock

fair_lock::fair_lock(const database& db, std::string_view name, fair_lock_options options)
    : state_(std::make_unique<detail::queue_lock_state>(db, name, detail::queue_kind::fair,
                                                        detail::queue_lock_settings::of(std::move(options)))) {}
fair_lock::~fair_lock() = default;
void fair_lock::lock() { state_->acquire(true, std::nullopt); }
bool fair_lock::lock(std::stop_token stop) { return state_->acquire(true, std::nullopt, std::move(stop)); }
bool fair_lock::try_lock() { return state_->acquire(true, state_->time().now()); }
bool fair_lock::try_lock_until_steady(std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  return state_->acquire(true, deadline, std::move(stop));
}
void fair_lock::unlock() noexcept {
  state_->who().unlock([&] { release(); });
}
void fair_lock::release() { state_->release_as(state_->current_owner(), true); }
bool fair_lock::holds() const noexcept { return detail::holds_mode(*state_, false, false); }
std::int64_t fair_lock::count() const noexcept { return detail::levels_of(*state_, true); }
std::int64_t fair_lock::fence() const { return detail::fence_of(state_->current(), state_->who().what()); }
std::stop_token fair_lock::lost_token() const { return detail::lost_token_of(state_->current(), state_->who().what()); }
const std::string& fair_lock::name() const noexcept { return state_->name(); }

// ---- rw_lock

rw_lock::rw_lock(const database& db, std::string_view name, rw_lock_options options)
    : state_(std::make_unique<detail::queue_lock_state>(db, name, detail::queue_kind::rw,
                                                        detail::queue_lock_settings::of(std::move(options)))) {}
rw_lock::~rw_lock() = default;
void rw_lock::lock() { state_->acquire(true, std::nullopt); }
bool rw_lock::lock(std::stop_token stop) { return state_->acquire(true, std::nullopt, std::move(stop)); }
bool rw_lock::try_lock() { return state_->acquire(true, state_->time().now()); }
void rw_lock::unlock() noexcept {
  state_->who().unlock([&] { release(); });
}
void rw_lock::release() { state_->release_as(state_->current_owner(), true); }
void rw_lock::lock_shared() { state_->acquire(false, std::nullopt); }
bool rw_lock::lock_shared(std::stop_token stop) { return state_->acquire(false, std::nullopt, std::move(stop)); }
bool rw_lock::try_lock_shared() { return state_->acquire(false, state_->time().now()); }
void rw_lock::unlock_shared() noexcept {
  state_->who().unlock([&] { release_shared(); });
}
void rw_lock::release_shared() { state_->release_as(state_->current_owner(), false); }
bool rw_lock::try_lock_until_steady(bool shared, std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  return state_->acquire(!shared, deadline, std::move(stop));
}
bool rw_lock::holds() const noexcept { return detail::holds_mode(*state_, true, false); }
bool rw_lock::holds_shared() const noexcept { return detail::holds_mode(*state_, false, true); }
std::int64_t rw_lock::count() const noexcept { return detail::levels_of(*state_, true); }
std::int64_t rw_lock::shared_count() const noexcept { return detail::levels_of(*state_, false); }
std::int64_t rw_lock::fence() const { return detail::fence_of(state_->current(), state_->who().what()); }
std::stop_token rw_lock::lost_token() const { return detail::lost_token_of(state_->current(), state_->who().what()); }
const std::string& rw_lock::name() const noexcept { return state_->name(); }

}  // namespace sqllock
