// sqllock::semaphore and the semaphore_state behind it: acquisition of permits and waiting for
// one. SQL lives in the dialect (dialect/permit_sql.hpp) and runs through permit_store; renewal
// and loss detection are the lease registry's, shared with table_lock (a permit is a lease_slot in
// its permit store). A granted permit is a permit_state (permit_state.hpp, permit.cpp).
#include "sqllock/semaphore.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "common/lock_name.hpp"
#include "core/kinds/permit_state.hpp"
#include "core/lease/lease_grant.hpp"
#include "core/wait/retry_wait.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {

namespace {

const std::string& checked(const std::string& name, std::int64_t permits, std::chrono::milliseconds ttl) {
  validate_lock_name(name);
  if (permits < 1 || permits > kMaxPermits)
    throw invalid_argument("semaphore '" + name + "': permits must be between 1 and " + std::to_string(kMaxPermits) +
                           ", got " + std::to_string(permits));
  validate_ttl(ttl);
  return name;
}

// Unique per permit in this process; with the handle's session token, unique everywhere.
std::string next_permit_owner(const lease_registry& registry) {
  static std::atomic<std::uint64_t> counter{0};
  return registry.session() + "/p:" + std::to_string(++counter);
}

}  // namespace

class semaphore_state {
 public:
  semaphore_state(const database& db, std::string_view name, std::int64_t permits, semaphore_options options)
      : shared_(std::make_shared<const semaphore_shared>(db, checked(std::string(name), permits, options.ttl), permits,
                                                         std::move(options))) {}

  std::unique_ptr<permit_state> attempt() {
    auto& impl = shared_->impl;
    auto& registry = impl.registry();
    const auto& opt = shared_->options;
    const std::string owner = next_permit_owner(registry);
    auto slot = registry.pin(shared_->name, owner, permit_rows_store());
    const scoped_pin pinned(registry, slot);

    std::lock_guard op(slot->op);
    std::optional<permit_grant> got;
    time_source::time_point sent;
    {
      auto conn = impl.borrow();
      auto store = shared_->store(*conn);
      // One acquire statement; a late grant is given back by owner and fence (lease_grant.hpp).
      got = acquire_in_time(
          registry, std::span(&slot, 1), impl.time(), opt.ttl, sent,
          [&] {
            return store.acquire({shared_->name, shared_->permits, owner, registry.session(), opt.ttl, opt.auto_renew});
          },
          [&](const permit_grant& late) { store.release(shared_->name, owner, late.fence); });
    }
    if (!got) return nullptr;
    const auto generation = registry.record_acquired(*slot, acquired{1, got->fence}, opt.ttl, opt.auto_renew, sent);
    registry.pin(shared_->name, owner, permit_rows_store());  // the permit keeps the slot while it holds it
    return std::make_unique<permit_state>(shared_, slot, got->slot, generation);
  }

  std::unique_ptr<permit_state> until(std::optional<time_source::time_point> deadline, std::stop_token stop) {
    std::unique_ptr<permit_state> got;
    retry_until(shared_->impl, shared_->name, deadline,
                {.attempt = [&] { return (got = attempt()) != nullptr; },
                 .lease_remaining =
                     [&] {
                       auto conn = shared_->impl.borrow();
                       return shared_->store(*conn).lease_remaining(shared_->name, shared_->permits);
                     }},
                std::move(stop));
    return got;
  }

  const std::string& name() const noexcept { return shared_->name; }
  std::int64_t permits() const noexcept { return shared_->permits; }

 private:
  std::shared_ptr<const semaphore_shared> shared_;
};

}  // namespace detail

semaphore::semaphore(const database& db, std::string_view name, std::int64_t permits, semaphore_options options)
    : state_(std::make_unique<detail::semaphore_state>(db, name, permits, std::move(options))) {}

semaphore::~semaphore() = default;

std::optional<permit> semaphore::try_acquire() {
  if (auto got = state_->attempt()) return permit(std::move(got));
  return std::nullopt;
}

std::optional<permit> semaphore::try_acquire_until_steady(std::chrono::steady_clock::time_point deadline,
                                                          std::stop_token stop) {
  if (auto got = state_->until(deadline, std::move(stop))) return permit(std::move(got));
  return std::nullopt;
}

permit semaphore::acquire() { return permit(state_->until(std::nullopt, {})); }

std::optional<permit> semaphore::acquire(std::stop_token stop) {
  if (auto got = state_->until(std::nullopt, std::move(stop))) return permit(std::move(got));
  return std::nullopt;
}

const std::string& semaphore::name() const noexcept { return state_->name(); }

std::int64_t semaphore::permits() const noexcept { return state_->permits(); }

}  // namespace sqllock
