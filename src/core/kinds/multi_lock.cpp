// sqllock::multi_lock: several lock rows taken all or none per attempt. SQL lives in the dialect
// (dialect/multi_lock_sql.*) and runs through multi_store; releases, renewal, loss and orphan
// cleanup are table_lock's own (table_store, lease_registry): every name is an ordinary lock row
// with a lease slot per (name, owner), so a table_lock of the same name and owner shares it.
#include "sqllock/multi_lock.hpp"

#include <algorithm>
#include <exception>
#include <mutex>

#include "core/handle/clock.hpp"
#include "core/handle/database_impl.hpp"
#include "core/hold/joined_loss.hpp"
#include "core/kinds/multi_lock_names.hpp"
#include "core/lease/lease_claim.hpp"
#include "core/lease/lease_grant.hpp"
#include "core/lease/multi_store.hpp"
#include "core/hold/ownership.hpp"
#include "core/wait/retry_wait.hpp"
#include "core/lease/table_store.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {
namespace {

bool same_parts(const std::vector<lease_hold>& a, const std::vector<lease_hold>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const lease_hold& x, const lease_hold& y) {
    return x.slot == y.slot && x.generation == y.generation;
  });
}

// What one owner's levels live on: a part per name (in name order) and their joined loss signal.
struct multi_hold {
  std::vector<lease_hold> parts;
  std::shared_ptr<joined_loss> loss;
};

bool same_hold(const multi_hold& a, const multi_hold& b) { return same_parts(a.parts, b.parts); }

std::vector<std::stop_token> loss_tokens(const std::vector<lease_hold>& parts, const lease_registry& registry) {
  std::vector<std::stop_token> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(registry.view(*p.slot).stop);
  return out;
}

}  // namespace

class multi_lock_state {
 public:
  multi_lock_state(const database& db, std::vector<std::string> names, multi_lock_options options)
      : db_(db), impl_(database_access::impl(db)), names_(checked_names(std::move(names), options.ttl)),
        options_(std::move(options)),
        who_("multi_lock_options", describe_names(names_), options_.owner, options_.on_unlock_error),
        sql_(multi_lock_statements(impl_.dialect(), db_.table(), names_.size())) {}

  ~multi_lock_state() {
    release_everything(
        levels_, who_, [&](const std::string& owner, std::size_t) { release_as(owner); },
        [&](const std::string& owner) { abandon(owner); });
  }

  bool attempt() {
    const std::string owner = current_owner();
    auto& registry = impl_.registry();
    std::vector<std::shared_ptr<lease_slot>> slots;
    std::vector<std::unique_ptr<scoped_pin>> pinned;  // unpinned when the attempt ends
    slots.reserve(names_.size());
    pinned.reserve(names_.size());
    for (const auto& name : names_) {
      slots.push_back(registry.pin(name, owner, lock_rows_store()));
      pinned.push_back(std::make_unique<scoped_pin>(registry, slots.back()));
    }
    // This owner's acquires and releases of a name take turns (lease_slot::op); a multi_lock
    // takes the names' turns in name order, as every multi_lock does, so they cannot deadlock.
    const auto ops = take_turns(slots);

    std::optional<std::vector<acquired>> taken;
    time_source::time_point sent;
    {
      auto conn = impl_.borrow();
      multi_store store(conn, impl_.sql(), *sql_);
      const multi_request request{names_, owner, registry.session(), options_.ttl, options_.auto_renew};
      // One attempt; a late grant is given back whole, by owner and fence (lease_grant.hpp).
      const auto acquire_once = [&] {
        return acquire_in_time(
            registry, slots, impl_.time(), options_.ttl, sent, [&] { return store.acquire(request); },
            [&](const std::vector<acquired>& got) { give_back(*conn, owner, got, std::vector<bool>(names_.size())); });
      };
      taken = acquire_once();
      if (taken) {
        // A name re-entered a lost hold's row (lease_grant.hpp): give the whole grant back,
        // deleting such rows by owner and fence, and try once more afresh.
        std::vector<bool> stale(names_.size());
        bool any_stale = false;
        for (std::size_t i = 0; i < names_.size(); ++i)
          if (reentered_a_lost_hold(registry, *slots[i], (*taken)[i])) stale[i] = any_stale = true;
        if (any_stale) {
          undo_or_mark_lost(registry, slots, [&] { give_back(*conn, owner, *taken, stale); });
          taken = acquire_once();
        }
      }
      if (!taken) return false;
    }

    std::vector<lease_hold> parts;
    parts.reserve(names_.size());
    for (std::size_t i = 0; i < names_.size(); ++i)
      parts.push_back(
          {slots[i], registry.record_acquired(*slots[i], (*taken)[i], options_.ttl, options_.auto_renew, sent)});
    const auto current = levels_.find(owner);
    multi_hold hold{std::move(parts), nullptr};
    hold.loss = current && same_hold(current->hold, hold)
                    ? current->hold.loss
                    : std::make_shared<joined_loss>(loss_tokens(hold.parts, registry));
    const auto recorded = levels_.add(owner, hold, 0, same_hold);
    if (recorded.is_new)
      for (const auto& name : names_)
        registry.pin(name, owner, lock_rows_store());  // the object keeps the slots while it holds them
    if (recorded.replaced) {                           // an earlier hold of ours here was lost
      forget_levels(owner, *current, hold);
      let_go(*recorded.replaced);
    }
    if (recorded.is_new && options_.on_lost) {
      // Every name's signal may fire; the user hears of the hold's loss once.
      for (const auto& p : hold.parts)
        p.slot->loss.set(this, [loss = hold.loss, on_lost = options_.on_lost] {
          if (loss->first_report()) on_lost();
        });
    }
    return true;
  }

  bool try_until(std::optional<time_source::time_point> deadline, std::stop_token stop) {
    // Nothing is held between attempts; a release of any of the names wakes the waiter. After a
    // refusal, the waiter first reads (no lock, one round trip) whether a name is still held by
    // another owner's live lease, and makes the next attempt — a transaction that locks rows and,
    // on MySQL, the fence counter row (docs/design.md, T8) — only when none is.
    const std::string owner = current_owner();
    const auto held_elsewhere = [&] {
      auto conn = impl_.borrow();
      return multi_store(conn, impl_.sql(), *sql_).lease_remaining(owner, names_);
    };
    bool refused = false;                           // an attempt was refused: read before the next one
    std::optional<std::chrono::milliseconds> busy;  // this round's read found a name held elsewhere
    return retry_until(impl_, names_, deadline,
                       {.attempt =
                            [&] {
                              busy.reset();
                              if (refused) {
                                const auto left = held_elsewhere();
                                if (left && *left > std::chrono::milliseconds::zero()) {
                                  busy = left;
                                  return false;
                                }
                              }
                              refused = true;
                              return attempt();
                            },
                        .lease_remaining = [&] { return busy ? busy : held_elsewhere(); }},
                       std::move(stop));
  }

  void release_as(const std::string& owner) {
    auto& registry = impl_.registry();
    const auto mine = levels_.find(owner);
    if (!mine) throw not_held(who_.not_held_message(levels_.others_hold(owner)));
    const auto& parts = mine->hold.parts;
    std::vector<std::shared_ptr<lease_slot>> slots;
    for (const auto& p : parts) slots.push_back(p.slot);
    const auto ops = take_turns(slots);
    bool lost = false;
    bool released = false;  // some name was given back
    std::exception_ptr failure;
    // A name whose release failed is given up like a lost one: renewal stops, and if the row is
    // still there the renewal thread deletes it (by owner and fence) as an orphan. The other names
    // are released; release() throws the first failure.
    const auto give_up = [&](lease_slot& s) {
      if (!failure) failure = std::current_exception();
      registry.mark_lost(s);
    };
    for (std::size_t k = parts.size(); k-- > 0;) {  // reverse name order
      lease_slot& slot = *parts[k].slot;
      const auto view = registry.view(slot);
      if (!view.held || view.generation != parts[k].generation) {
        lost = true;  // its row is not ours any more: nothing to send
        continue;
      }
      const releasing_scope releasing(registry, slot);
      try {
        auto conn = impl_.borrow();
        if (table_store(*conn, impl_.sql()).release(names_[k], owner, view.fence, view.depth)) {
          registry.record_released(slot);
          released = true;
        } else {
          registry.mark_lost(slot);  // taken over (or released by force)
          lost = true;
        }
      } catch (const outcome_unknown&) {
        give_up(slot);
      } catch (const std::exception&) {
        // Nothing given back or lost yet, and nothing changed (no connection, a refused statement):
        // the set is held as it was, still renewed, for another release (release_level's rule).
        if (!released && !lost) throw;
        give_up(slot);
      }
    }
    drop_one(owner);
    if (failure) std::rethrow_exception(failure);
    if (lost)
      throw not_held(who_.lost_before_release(
          "the lease of a name expired and it may have been taken over, or it was released by force; the other names "
          "were released"));
  }

  // The calling owner's hold as the registry sees it now.
  struct set_view {
    bool recorded = false;  // the owner has levels here (held, or lost and not yet released)
    bool held = false;      // every part is held
    std::vector<hold_view> parts;
    std::shared_ptr<joined_loss> loss;
  };
  set_view current() const {
    const auto mine = levels_.find(current_owner());
    set_view v;
    if (!mine) return v;
    v.recorded = true;
    v.held = true;
    v.loss = mine->hold.loss;
    for (const auto& p : mine->hold.parts) {
      auto part = impl_.registry().view(*p.slot);
      if (part.generation != p.generation) part.held = false;
      v.held = v.held && part.held;
      v.parts.push_back(std::move(part));
    }
    return v;
  }

  const std::vector<std::string>& names() const noexcept { return names_; }
  const ownership& who() const noexcept { return who_; }
  lease_claim claim(std::span<const claim_part> parts) const {
    return claim_hold(db_, lease_table::locks, who_.what(), current_owner(), parts, impl_.time().now());
  }
  const time_source& time() const noexcept { return impl_.time(); }

  // The owner token of the calling thread (or of the explicit owner key): the same as a
  // table_lock of this handle gives the same owner, so the two re-enter each other's rows.
  std::string current_owner() const { return impl_.registry().session() + "/" + who_.owner(); }
  std::int64_t levels() const { return levels_.count(current_owner(), 0); }

 private:
  // Locks the slots' op mutexes in the slots' (name) order.
  static std::vector<std::unique_lock<std::mutex>> take_turns(const std::vector<std::shared_ptr<lease_slot>>& slots) {
    std::vector<std::unique_lock<std::mutex>> ops;
    ops.reserve(slots.size());
    for (const auto& s : slots) ops.emplace_back(s->op);
    return ops;
  }

  // Undoes one attempt's grant, in reverse name order: each name's level is released, and the
  // `whole` names' rows are deleted whatever their count. Its callers mark the names' holds lost
  // when it throws (undo_or_mark_lost).
  void give_back(connection& conn, const std::string& owner, const std::vector<acquired>& got,
                 const std::vector<bool>& whole) {
    table_store store(conn, impl_.sql());
    for (std::size_t k = got.size(); k-- > 0;)
      store.release(names_[k], owner, got[k].fence, whole[k] ? 1 : got[k].count);
  }

  // The owner's hold `old` (with its levels) was lost and is replaced by `now`: its levels died
  // with it. But a name it did not lose is part of both (same slot, same generation), and its row
  // still counts the dead levels: give those back, or the row would outlive the new hold. A name
  // that cannot be given back is marked lost (its row is then deleted as an orphan).
  void forget_levels(const std::string& owner, const owner_levels<multi_hold>::entry& old, const multi_hold& now) {
    auto& registry = impl_.registry();
    for (std::size_t i = 0; i < now.parts.size(); ++i) {
      const auto& part = now.parts[i];
      if (old.hold.parts[i].slot != part.slot || old.hold.parts[i].generation != part.generation) continue;
      try {
        for (std::int64_t level = 0; level < old.total(); ++level) {
          const auto view = registry.view(*part.slot);
          if (view.depth <= 1) break;  // only the new level is left: never delete its row here
          auto conn = impl_.borrow();
          if (!table_store(*conn, impl_.sql()).release(names_[i], owner, view.fence, view.depth)) {
            registry.mark_lost(*part.slot);
            break;
          }
          registry.record_released(*part.slot);
        }
      } catch (const std::exception&) {
        registry.mark_lost(*part.slot);
      }
    }
  }

  // Gives up the owner's hold locally after a failed release: renewal stops, and the watchdog
  // deletes the rows still there as orphans.
  void abandon(const std::string& owner) {
    if (const auto mine = levels_.find(owner))
      for (const auto& p : mine->hold.parts) impl_.registry().forget(*p.slot);
    drop(owner);
  }
  void drop_one(const std::string& owner) {
    if (auto hold = levels_.drop_one(owner, 0)) let_go(*hold);
  }
  void drop(const std::string& owner) {
    if (auto hold = levels_.drop(owner)) let_go(*hold);
  }
  // The object no longer keeps these slots.
  void let_go(const multi_hold& hold) {
    for (const auto& p : hold.parts) {
      p.slot->loss.clear(this);
      impl_.registry().unpin(p.slot);
    }
  }

  database db_;  // keeps the handle (and its watchdog) alive while this lock exists
  database_impl& impl_;
  const std::vector<std::string> names_;  // sorted by bytes
  multi_lock_options options_;
  const ownership who_;
  std::shared_ptr<const multi_lock_sql> sql_;
  owner_levels<multi_hold> levels_;
};

}  // namespace detail

multi_lock::multi_lock(const database& db, std::vector<std::string> names, multi_lock_options options)
    : state_(std::make_unique<detail::multi_lock_state>(db, std::move(names), std::move(options))) {}

multi_lock::~multi_lock() = default;

void multi_lock::lock() { state_->try_until(std::nullopt, {}); }

bool multi_lock::lock(std::stop_token stop) { return state_->try_until(std::nullopt, std::move(stop)); }

bool multi_lock::try_lock() { return state_->attempt(); }

bool multi_lock::try_lock_until_steady(std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  return state_->try_until(deadline, std::move(stop));
}

void multi_lock::unlock() noexcept {
  state_->who().unlock([&] { release(); });
}

void multi_lock::release() { state_->release_as(state_->current_owner()); }

bool multi_lock::holds() const noexcept {
  try {
    const auto v = state_->current();
    if (!v.held) return false;
    const auto now = state_->time().now();
    return std::all_of(v.parts.begin(), v.parts.end(), [&](const detail::hold_view& p) { return now < p.deadline; });
  } catch (...) {
    return false;
  }
}

std::int64_t multi_lock::count() const noexcept {
  try {
    return state_->levels();
  } catch (...) {
    return 0;
  }
}

std::int64_t multi_lock::fence(std::string_view name) const {
  const auto& all = names();
  const auto it = std::lower_bound(all.begin(), all.end(), name);
  if (it == all.end() || *it != name)
    throw invalid_argument("fence(): '" + std::string(name) + "' is not a name of this " + state_->who().what());
  const auto v = state_->current();
  if (!v.held) throw not_held("fence(): " + state_->who().what() + " is not held by the caller");
  return v.parts[static_cast<std::size_t>(it - all.begin())].fence;
}

std::vector<std::int64_t> multi_lock::fences() const {
  const auto v = state_->current();
  if (!v.held) throw not_held("fences(): " + state_->who().what() + " is not held by the caller");
  std::vector<std::int64_t> out;
  out.reserve(v.parts.size());
  for (const auto& p : v.parts) out.push_back(p.fence);
  return out;
}

std::stop_token multi_lock::lost_token() const {
  const auto v = state_->current();
  if (!v.recorded) throw not_held("lost_token(): " + state_->who().what() + " is not held by the caller");
  return v.loss->token();
}

lease_claim multi_lock::claim() const {
  const auto v = state_->current();
  if (!v.recorded) throw not_held("claim(): " + state_->who().what() + " is not held by the caller");
  std::vector<detail::claim_part> parts;
  parts.reserve(v.parts.size());
  for (std::size_t i = 0; i < v.parts.size(); ++i) parts.push_back({names()[i], v.parts[i]});
  return state_->claim(parts);
}

const std::vector<std::string>& multi_lock::names() const noexcept { return state_->names(); }

}  // namespace sqllock
