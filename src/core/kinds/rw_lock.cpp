// sqllock::rw_lock: write and read places of a queue (core/kinds/queue_lock_state.hpp).
#include "sqllock/rw_lock.hpp"

#include "core/kinds/queue_lock_state.hpp"
#include "core/lease/lease_levels.hpp"

namespace sqllock {

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
bool rw_lock::holds() const noexcept { return state_->holds_mode(true, false); }
bool rw_lock::holds_shared() const noexcept { return state_->holds_mode(false, true); }
std::int64_t rw_lock::count() const noexcept { return state_->levels_or_zero(true); }
std::int64_t rw_lock::shared_count() const noexcept { return state_->levels_or_zero(false); }
std::int64_t rw_lock::fence() const { return detail::fence_of(state_->current(), state_->who().what()); }
std::stop_token rw_lock::lost_token() const { return detail::lost_token_of(state_->current(), state_->who().what()); }
lease_claim rw_lock::claim() const { return state_->claim(); }
const std::string& rw_lock::name() const noexcept { return state_->name(); }

}  // namespace sqllock
