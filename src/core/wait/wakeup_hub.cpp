#include "core/wait/wakeup_hub.hpp"

#include "core/handle/database_impl.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

wakeup_hub::wakeup_hub(database_impl& db) : db_(db) {}

wakeup_hub::~wakeup_hub() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();  // the listener wakes at least every 200 ms
  }
}

void wakeup_hub::join(const std::string& resource) {
  std::unique_lock lock(mu_);
  ++interests_[resource].waiters;
  if (db_.sql().wakeup_channel.empty()) return;
  // ?prepare=off is for transaction-mode poolers (PgBouncer), which deliver no notifications: a
  // LISTEN subscribes whichever server session the pool lends, not this client. Waiters poll.
  if (!db_.spec().prepare_statements) return;
  if (state_ == state::idle) {
    state_ = state::starting;
    thread_ = std::jthread([this](std::stop_token st) { listen(st); });
  }
  // The first waiter must not miss a release that happens before the LISTEN is in place.
  cv_.wait_for(lock, std::chrono::seconds(2), [&] { return state_ != state::starting; });
}

void wakeup_hub::leave(const std::string& resource) {
  std::lock_guard lock(mu_);
  auto it = interests_.find(resource);
  if (it != interests_.end() && --it->second.waiters <= 0) interests_.erase(it);
}

std::optional<std::uint64_t> wakeup_hub::ticket(const std::string& resource) {
  std::lock_guard lock(mu_);
  if (state_ != state::listening) return std::nullopt;
  return interests_[resource].releases;
}

void wakeup_hub::wait(const std::string& resource, std::uint64_t ticket, std::chrono::steady_clock::time_point until) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, until, [&] {
    auto it = interests_.find(resource);
    return state_ != state::listening || (it != interests_.end() && it->second.releases != ticket);
  });
}

void wakeup_hub::wait_any(const std::vector<std::pair<std::string, std::uint64_t>>& tickets,
                          std::chrono::steady_clock::time_point until, std::stop_token stop) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, std::move(stop), until, [&] {
    if (state_ != state::listening) return true;
    for (const auto& [resource, ticket] : tickets)
      if (auto it = interests_.find(resource); it != interests_.end() && it->second.releases != ticket) return true;
    return false;
  });
}

void wakeup_hub::listen(std::stop_token stop) {
  auto retry_delay = std::chrono::milliseconds(100);
  while (!stop.stop_requested()) {
    std::unique_ptr<connection> conn;
    notification_source* source = nullptr;
    bool unsupported = false;
    try {
      conn = db_.open();
      source = conn->notifications();
      unsupported = source == nullptr;
      if (source) source->listen(db_.sql().wakeup_channel);
    } catch (const error&) {
      source = nullptr;
    }
    {
      std::lock_guard lock(mu_);
      state_ = source ? state::listening : state::down;
      // Anything may have been released while no one listened: let every waiter try again.
      for (auto& [name, i] : interests_) ++i.releases;
    }
    cv_.notify_all();
    if (unsupported) return;  // this driver cannot listen: waiters poll
    if (!source) {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, stop, retry_delay, [] { return false; });
      retry_delay = std::min(retry_delay * 2, std::chrono::milliseconds(5000));
      continue;
    }
    retry_delay = std::chrono::milliseconds(100);
    try {
      while (!stop.stop_requested()) {
        const auto payloads = source->await(std::chrono::milliseconds(200));
        if (payloads.empty()) continue;
        {
          std::lock_guard lock(mu_);
          for (const auto& resource : payloads)
            if (auto it = interests_.find(resource); it != interests_.end()) ++it->second.releases;
        }
        cv_.notify_all();
      }
    } catch (const error&) {
      std::lock_guard lock(mu_);
      state_ = state::down;  // reconnect on the next loop; waiters poll meanwhile
    }
    cv_.notify_all();
  }
}

}  // namespace sqllock::detail
