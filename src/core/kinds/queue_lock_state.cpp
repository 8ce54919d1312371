#include "core/kinds/queue_lock_state.hpp"

#include "common/lock_name.hpp"
#include "core/lease/lease_claim.hpp"
#include "core/lease/queue_place.hpp"
#include "core/wait/queue_pace.hpp"
#include "core/wait/retry_wait.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

std::size_t mode_of(bool write) { return write ? queue_lock_state::kWrite : queue_lock_state::kRead; }

}  // namespace

queue_lock_state::queue_lock_state(const database& db, std::string_view name, queue_kind kind,
                                   queue_lock_settings settings)
    : db_(db), impl_(database_access::impl(db)), name_(checked(std::string(name), settings.ttl)), kind_(kind),
      store_(queue_entries_store(kind)), sql_(queue_statements(impl_.dialect(), impl_.options().table)),
      settings_(std::move(settings)),
      who_(kind == queue_kind::fair ? "fair_lock_options" : "rw_lock_options",
           (kind == queue_kind::fair ? "fair lock '" : "read-write lock '") + name_ + "'", settings_.owner,
           settings_.on_unlock_error),
      levels_(impl_.registry(), who_, this) {}

queue_lock_state::~queue_lock_state() {
  levels_.release_everything([&](const std::string& owner, std::size_t mode) { release_as(owner, mode == kWrite); });
}

bool queue_lock_state::acquire(bool write, std::optional<time_source::time_point> deadline, std::stop_token stop) {
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
    queue_place waiting(impl_, *sql_, slot, {name_, kind_, got.ticket, owner, write});
    bool lost_place = false;
    std::optional<std::chrono::milliseconds> wait;
    queue_pace pace;  // the checks' blockers over time
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
               pace.observe(impl_.time().now(), t.blockers);
               if (!t.mine) return lost_place = true;
               if (!t.holds()) return false;
               // A verdict read after the place's lease deadline cannot be trusted: queue again.
               if (!registry.record_granted(*slot, generation)) return lost_place = true;
               return true;
             },
         .lease_remaining = [&] { return wait; },
         // Where no release is announced, the head polls as often as its queue moves: in a queue
         // that moves every few milliseconds it looks again within a few milliseconds. A waiter
         // further back checks about as often as its turn can come nearer (core/wait/queue_pace).
         .progressed = [&] { return pace.moved(); },
         .pace = [&] { return pace.pace(); }},
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

void queue_lock_state::release_as(const std::string& owner, bool write) {
  levels_.release(
      owner, mode_of(write),
      [&](const hold_view& view) {
        auto conn = impl_.borrow();
        return store(*conn).release(name_, kind_, view.fence, owner, write).has_value();
      },
      " is no longer held by this owner: its lease expired and its place was deleted (or it was released "
      "by force)");
}

bool queue_lock_state::holds_mode(bool write_only, bool read_only) const noexcept {
  try {
    if (!holds_now(current(), time().now())) return false;
    if (write_only) return levels(true) > 0;
    if (read_only) return levels(false) > 0;
    return true;
  } catch (...) {
    return false;
  }
}

std::int64_t queue_lock_state::levels_or_zero(bool write) const noexcept {
  try {
    return levels(write);
  } catch (...) {
    return 0;
  }
}

const std::string& queue_lock_state::checked(const std::string& name, std::chrono::milliseconds ttl) {
  validate_lock_name(name);
  validate_ttl(ttl);
  return name;
}

queue_store queue_lock_state::store(connection& conn) const {
  return queue_store(conn, *sql_, impl_.sql().wakeup_channel);
}

queue_request queue_lock_state::request(const std::string& owner, bool write) const {
  return {name_, kind_, owner, impl_.registry().session(), settings_.ttl, settings_.auto_renew, write};
}

std::string queue_lock_state::upgrade_refused() const {
  return who_.what() +
         ": the calling owner holds it for reading and asked to write; an upgrade can only "
         "deadlock (two readers upgrading wait for each other): release the read lock, then lock()";
}

bool queue_lock_state::add_level(const std::string& owner, const lease_levels::entry& mine, bool write) {
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

lease_claim queue_lock_state::claim() const {
  const claim_part part{name_, current()};
  return claim_hold(db_, lease_table::queue, who_.what(), current_owner(), std::span(&part, 1), impl_.time().now());
}

}  // namespace sqllock::detail
