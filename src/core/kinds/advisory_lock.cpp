// sqllock::advisory_lock: the public face of a session-level PostgreSQL advisory lock. The
// statements are in advisory_protocol, the sessions in session_lock / pinned_session.
#include "sqllock/advisory_lock.hpp"

#include "core/session/advisory_protocol.hpp"
#include "core/handle/database_impl.hpp"
#include "common/lock_name.hpp"
#include "common/sha256.hpp"

namespace sqllock {
namespace {

using detail::lock_mode;

std::unique_ptr<detail::session_lock> make_state(const database& db, const advisory_key& key, const std::string& name,
                                                 advisory_lock_options options) {
  auto& impl = detail::database_access::impl(db);
  std::string description = name.empty() ? "advisory lock " + key.to_string()
                                         : "advisory lock '" + name + "' (key " + key.to_string() + ")";
  return std::make_unique<detail::session_lock>(
      db, std::make_unique<detail::advisory_protocol>(impl, key, std::move(description)), std::move(options));
}

}  // namespace

advisory_key advisory_key::from_name(std::string_view name) {
  detail::validate_lock_name(name);
  const auto digest = detail::sha256(name);
  std::uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits = (bits << 8) | digest[static_cast<std::size_t>(i)];
  return advisory_key(static_cast<std::int64_t>(bits));
}

std::string advisory_key::to_string() const {
  if (!pair_) return std::to_string(value_);
  // Appended piece by piece: g++ 12 at -O3 reports a false -Wrestrict for "literal" + string&&.
  std::string out = "(";
  out += std::to_string(first());
  out += ", ";
  out += std::to_string(second());
  out += ')';
  return out;
}

advisory_lock::advisory_lock(const database& db, std::string_view name, advisory_lock_options options)
    : key_(advisory_key::from_name(name)), name_(name), state_(make_state(db, key_, name_, std::move(options))) {}

advisory_lock::advisory_lock(const database& db, advisory_key key, advisory_lock_options options)
    : key_(key), state_(make_state(db, key_, name_, std::move(options))) {}

advisory_lock::~advisory_lock() = default;

void advisory_lock::lock() { state_->acquire(lock_mode::exclusive, std::nullopt); }
bool advisory_lock::lock(std::stop_token stop) {
  return state_->acquire(lock_mode::exclusive, std::nullopt, std::move(stop));
}
bool advisory_lock::try_lock() { return state_->acquire(lock_mode::exclusive, std::chrono::steady_clock::now()); }
void advisory_lock::unlock() noexcept { state_->unlock(lock_mode::exclusive); }
void advisory_lock::release() { state_->release(lock_mode::exclusive); }

void advisory_lock::lock_shared() { state_->acquire(lock_mode::shared, std::nullopt); }
bool advisory_lock::lock_shared(std::stop_token stop) {
  return state_->acquire(lock_mode::shared, std::nullopt, std::move(stop));
}
bool advisory_lock::try_lock_shared() { return state_->acquire(lock_mode::shared, std::chrono::steady_clock::now()); }
void advisory_lock::unlock_shared() noexcept { state_->unlock(lock_mode::shared); }
void advisory_lock::release_shared() { state_->release(lock_mode::shared); }

bool advisory_lock::try_lock_until_steady(bool shared, std::chrono::steady_clock::time_point deadline,
                                          std::stop_token stop) {
  return state_->acquire(shared ? lock_mode::shared : lock_mode::exclusive, deadline, std::move(stop));
}

bool advisory_lock::holds() const noexcept { return state_->holds(lock_mode::exclusive); }
bool advisory_lock::holds_shared() const noexcept { return state_->holds(lock_mode::shared); }
std::int64_t advisory_lock::count() const noexcept { return state_->count(lock_mode::exclusive); }
std::int64_t advisory_lock::shared_count() const noexcept { return state_->count(lock_mode::shared); }
std::stop_token advisory_lock::lost_token() const { return state_->lost_token(); }
const advisory_key& advisory_lock::key() const noexcept { return key_; }
const std::string& advisory_lock::name() const noexcept { return name_; }

}  // namespace sqllock
