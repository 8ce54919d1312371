// sqllock::multi_lock: several lock rows taken all or none per attempt. SQL lives in the dialect
// (dialect/multi_lock_sql.*) and runs through multi_store; releases, renewal, loss and orphan
// cleanup are table_lock's own (table_store, lease_registry): every name is an ordinary lock row
// with a lease slot per (name, owner), so a table_lock of the same name and owner shares it. The
// levels of a set, and its release, live in core/lease/lease_set_levels; this file has the attempt.
#include "sqllock/multi_lock.hpp"

#include <algorithm>

#include "core/handle/clock.hpp"
#include "core/handle/database_impl.hpp"
#include "core/kinds/multi_lock_names.hpp"
#include "core/lease/lease_claim.hpp"
#include "core/lease/lease_grant.hpp"
#include "core/lease/lease_set_levels.hpp"
#include "core/lease/multi_store.hpp"
#include "core/hold/ownership.hpp"
#include "core/wait/retry_wait.hpp"
#include "core/lease/table_store.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {

class multi_lock_state {
 public:
  multi_lock_state(const database& db, std::vector<std::string> names, multi_lock_options options)
      : db_(db), impl_(database_access::impl(db)), names_(checked_names(std::move(names), options.ttl)),
        options_(std::move(options)),
        who_("multi_lock_options", describe_names(names_), options_.owner, options_.on_unlock_error),
        sql_(multi_lock_statements(impl_.dialect(), db_.table(), names_.size())), levels_(impl_, names_, who_, this) {}

  ~multi_lock_state() { levels_.release_everything(); }

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

    levels_.record(owner, slots, *taken, options_.ttl, options_.auto_renew, sent, options_.on_lost);
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

  void release_as(const std::string& owner) { levels_.release(owner); }

  // The calling owner's hold as the registry sees it now.
  lease_set_levels::set_view current() const { return levels_.current(current_owner()); }

  const std::vector<std::string>& names() const noexcept { return names_; }
  const ownership& who() const noexcept { return who_; }
  lease_claim claim(std::span<const claim_part> parts) const {
    return claim_hold(db_, lease_table::locks, who_.what(), current_owner(), parts, impl_.time().now());
  }
  const time_source& time() const noexcept { return impl_.time(); }

  // The owner token of the calling thread (or of the explicit owner key): the same as a
  // table_lock of this handle gives the same owner, so the two re-enter each other's rows.
  std::string current_owner() const { return impl_.registry().session() + "/" + who_.owner(); }
  std::int64_t levels() const { return levels_.count(current_owner()); }

 private:
  // Undoes one attempt's grant, in reverse name order: each name's level is released, and the
  // `whole` names' rows are deleted whatever their count. Its callers mark the names' holds lost
  // when it throws (undo_or_mark_lost).
  void give_back(connection& conn, const std::string& owner, const std::vector<acquired>& got,
                 const std::vector<bool>& whole) {
    table_store store(conn, impl_.sql());
    for (std::size_t k = got.size(); k-- > 0;)
      store.release(names_[k], owner, got[k].fence, whole[k] ? 1 : got[k].count);
  }

  database db_;  // keeps the handle (and its watchdog) alive while this lock exists
  database_impl& impl_;
  const std::vector<std::string> names_;  // sorted by bytes
  multi_lock_options options_;
  const ownership who_;
  std::shared_ptr<const multi_lock_sql> sql_;
  lease_set_levels levels_;
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
