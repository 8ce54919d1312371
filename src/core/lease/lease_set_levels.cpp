#include "core/lease/lease_set_levels.hpp"

#include <algorithm>
#include <exception>

#include "core/handle/database_impl.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

bool same_parts(const std::vector<lease_hold>& a, const std::vector<lease_hold>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const lease_hold& x, const lease_hold& y) {
    return x.slot == y.slot && x.generation == y.generation;
  });
}

bool same_hold(const lease_set_hold& a, const lease_set_hold& b) { return same_parts(a.parts, b.parts); }

std::vector<std::stop_token> loss_tokens(const std::vector<lease_hold>& parts, const lease_registry& registry) {
  std::vector<std::stop_token> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(registry.view(*p.slot).stop);
  return out;
}

}  // namespace

std::vector<std::unique_lock<std::mutex>> take_turns(std::span<const std::shared_ptr<lease_slot>> slots) {
  std::vector<std::unique_lock<std::mutex>> ops;
  ops.reserve(slots.size());
  for (const auto& s : slots) ops.emplace_back(s->op);
  return ops;
}

lease_set_levels::set_view lease_set_levels::current(const std::string& owner) const {
  const auto mine = levels_.find(owner);
  set_view v;
  if (!mine) return v;
  v.recorded = true;
  v.held = true;
  v.loss = mine->hold.loss;
  for (const auto& p : mine->hold.parts) {
    auto part = db_.registry().view(*p.slot);
    if (part.generation != p.generation) part.held = false;
    v.held = v.held && part.held;
    v.parts.push_back(std::move(part));
  }
  return v;
}

void lease_set_levels::record(const std::string& owner, std::span<const std::shared_ptr<lease_slot>> slots,
                              const std::vector<acquired>& got, std::chrono::milliseconds lease, bool auto_renew,
                              steady::time_point sent, const lost_callback& on_lost) {
  auto& registry = db_.registry();
  std::vector<lease_hold> parts;
  parts.reserve(names_.size());
  for (std::size_t i = 0; i < names_.size(); ++i)
    parts.push_back({slots[i], registry.record_acquired(*slots[i], got[i], lease, auto_renew, sent)});
  const auto current = levels_.find(owner);
  lease_set_hold hold{std::move(parts), nullptr};
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
  if (recorded.is_new && on_lost) {
    // Every name's signal may fire; the user hears of the hold's loss once.
    for (const auto& p : hold.parts)
      p.slot->loss.set(object_, [loss = hold.loss, on_lost] {
        if (loss->first_report()) on_lost();
      });
  }
}

void lease_set_levels::release(const std::string& owner) {
  auto& registry = db_.registry();
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
      auto conn = db_.borrow();
      if (table_store(*conn, db_.sql()).release(names_[k], owner, view.fence, view.depth)) {
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

void lease_set_levels::abandon(const std::string& owner) {
  if (const auto mine = levels_.find(owner))
    for (const auto& p : mine->hold.parts) db_.registry().forget(*p.slot);
  drop(owner);
}

void lease_set_levels::release_everything() noexcept {
  detail::release_everything(
      levels_, who_, [&](const std::string& owner, std::size_t) { release(owner); },
      [&](const std::string& owner) { abandon(owner); });
}

void lease_set_levels::forget_levels(const std::string& owner, const owner_levels<lease_set_hold>::entry& old,
                                     const lease_set_hold& now) {
  auto& registry = db_.registry();
  for (std::size_t i = 0; i < now.parts.size(); ++i) {
    const auto& part = now.parts[i];
    if (old.hold.parts[i].slot != part.slot || old.hold.parts[i].generation != part.generation) continue;
    try {
      for (std::int64_t level = 0; level < old.total(); ++level) {
        const auto view = registry.view(*part.slot);
        if (view.depth <= 1) break;  // only the new level is left: never delete its row here
        auto conn = db_.borrow();
        if (!table_store(*conn, db_.sql()).release(names_[i], owner, view.fence, view.depth)) {
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

void lease_set_levels::drop_one(const std::string& owner) {
  if (auto hold = levels_.drop_one(owner, 0)) let_go(*hold);
}

void lease_set_levels::drop(const std::string& owner) {
  if (auto hold = levels_.drop(owner)) let_go(*hold);
}

void lease_set_levels::let_go(const lease_set_hold& hold) {
  for (const auto& p : hold.parts) {
    p.slot->loss.clear(object_);
    db_.registry().unpin(p.slot);
  }
}

}  // namespace sqllock::detail
