// sqllock::fair_lock: exclusive places of a queue (core/kinds/queue_lock_state.hpp).
#include "sqllock/fair_lock.hpp"

#include "core/kinds/queue_lock_state.hpp"
#include "core/lease/lease_levels.hpp"

namespace sqllock {

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
bool fair_lock::holds() const noexcept { return state_->holds_mode(false, false); }
std::int64_t fair_lock::count() const noexcept { return state_->levels_or_zero(true); }
std::int64_t fair_lock::fence() const { return detail::fence_of(state_->current(), state_->who().what()); }
std::stop_token fair_lock::lost_token() const { return detail::lost_token_of(state_->current(), state_->who().what()); }
lease_claim fair_lock::claim() const { return state_->claim(); }
const std::string& fair_lock::name() const noexcept { return state_->name(); }

}  // namespace sqllock
