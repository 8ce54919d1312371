// sqllock::table_lock: acquisition, re-entry, release and waiting. SQL lives in the dialect and
// runs through table_store; renewal and loss detection live in lease_registry.
#include "sqllock/table_lock.hpp"

#include "common/lock_name.hpp"
#include "core/handle/clock.hpp"
#include "core/handle/database_impl.hpp"
#include "core/lease/lease_claim.hpp"
#include "core/lease/lease_grant.hpp"
#include "core/lease/lease_levels.hpp"
#include "core/hold/ownership.hpp"
#include "core/wait/retry_wait.hpp"
#include "core/lease/table_store.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {
namespace {

const std::string& checked_name(const std::string& name, std::chrono::milliseconds ttl) {
  validate_lock_name(name);
  validate_ttl(ttl);
  return name;
}

}  // namespace

class table_lock_state {
 public:
  table_lock_state(const database& db, std::string_view name, table_lock_options options)
      : db_(db), impl_(database_access::impl(db)), name_(name), options_(std::move(options)),
        who_("table_lock_options", "lock '" + checked_name(name_, options_.ttl) + "'", options_.owner,
             options_.on_unlock_error),
        levels_(impl_.registry(), who_, this) {}

  ~table_lock_state() {
    levels_.release_everything([&](const std::string& owner, std::size_t) { release_as(owner); });
  }

  bool attempt() {
    const std::string owner = current_owner();
    auto& registry = impl_.registry();
    auto slot = registry.pin(name_, owner, lock_rows_store());
    const scoped_pin pinned(registry, slot);

    std::lock_guard op(slot->op);
    std::optional<acquired> taken;
    time_source::time_point sent;
    {
      auto conn = impl_.borrow();
      table_store store(*conn, impl_.sql());
      const acquire_request request{name_, owner, registry.session(), options_.ttl, options_.auto_renew};
      // One acquire statement; a late grant is undone by owner, fence and count (lease_grant.hpp).
      const auto acquire_once = [&] {
        return acquire_in_time(
            registry, std::span(&slot, 1), impl_.time(), options_.ttl, sent, [&] { return store.acquire(request); },
            [&](const acquired& got) { store.release(name_, owner, got.fence, got.count); });
      };
      taken = acquire_once();
      if (taken && reentered_a_lost_hold(registry, *slot, *taken)) {
        // Not ours to build on (lease_grant.hpp): delete the row by owner and fence, take it afresh.
        store.release(name_, owner, taken->fence, 1);
        taken = acquire_once();
      }
      if (!taken) return false;
    }
    const auto generation = registry.record_acquired(*slot, *taken, options_.ttl, options_.auto_renew, sent);
    levels_.record(owner, slot, generation, 0, options_.on_lost);
    return true;
  }

  bool try_until(std::optional<time_source::time_point> deadline, std::stop_token stop) {
    return retry_until(impl_, name_, deadline,
                       {.attempt = [&] { return attempt(); },
                        .lease_remaining =
                            [&] {
                              auto conn = impl_.borrow();
                              return table_store(*conn, impl_.sql()).lease_remaining(name_);
                            }},
                       std::move(stop));
  }

  void release_as(const std::string& owner) {
    levels_.release(
        owner, 0,
        [&](const hold_view& view) {
          auto conn = impl_.borrow();
          return table_store(*conn, impl_.sql()).release(name_, owner, view.fence, view.depth);
        },
        " is no longer held by this owner: its lease expired and another owner took it over (or it was "
        "released by force)");
  }

  hold_view current() const { return levels_.current(current_owner()); }
  lease_claim claim() const {
    const claim_part part{name_, current()};
    return claim_hold(db_, lease_table::locks, who_.what(), current_owner(), std::span(&part, 1), impl_.time().now());
  }
  std::int64_t levels() const { return levels_.count(current_owner(), 0); }

  const std::string& name() const noexcept { return name_; }
  const ownership& who() const noexcept { return who_; }
  const time_source& time() const noexcept { return impl_.time(); }

  // The owner token of the calling thread (or of the explicit owner key): scoped to the handle.
  std::string current_owner() const { return impl_.registry().session() + "/" + who_.owner(); }

 private:
  database db_;  // keeps the handle (and its watchdog) alive while this lock exists
  database_impl& impl_;
  const std::string name_;
  table_lock_options options_;
  const ownership who_;
  lease_levels levels_;
};

}  // namespace detail

table_lock::table_lock(const database& db, std::string_view name, table_lock_options options)
    : state_(std::make_unique<detail::table_lock_state>(db, name, std::move(options))) {}

table_lock::~table_lock() = default;

void table_lock::lock() { state_->try_until(std::nullopt, {}); }

bool table_lock::lock(std::stop_token stop) { return state_->try_until(std::nullopt, std::move(stop)); }

bool table_lock::try_lock() { return state_->attempt(); }

bool table_lock::try_lock_until_steady(std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  return state_->try_until(deadline, std::move(stop));
}

void table_lock::unlock() noexcept {
  state_->who().unlock([&] { release(); });
}

void table_lock::release() { state_->release_as(state_->current_owner()); }

bool table_lock::holds() const noexcept {
  try {
    return detail::holds_now(state_->current(), state_->time().now());
  } catch (...) {
    return false;
  }
}

std::int64_t table_lock::count() const noexcept {
  try {
    return state_->levels();
  } catch (...) {
    return 0;
  }
}

std::int64_t table_lock::fence() const { return detail::fence_of(state_->current(), state_->who().what()); }

std::stop_token table_lock::lost_token() const {
  return detail::lost_token_of(state_->current(), state_->who().what());
}

lease_claim table_lock::claim() const { return state_->claim(); }

const std::string& table_lock::name() const noexcept { return state_->name(); }

}  // namespace sqllock
