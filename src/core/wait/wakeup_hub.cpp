#include "core/wait/wakeup_hub.hpp"

#include "core/handle/database_impl.hpp"
#include "driver/connection.hpp"
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
  if (it == interests_.end() || --it->second.waiters > 0) return;
  if (it->second.registered) unregister_.push_back(resource);
  interests_.erase(it);
}

void wakeup_hub::sync_registrations(connection& conn) {
  const auto& sql = db_.sql();
  if (sql.wakeup_register.empty()) return;
  std::vector<std::string> to_register, to_unregister;
  {
    std::lock_guard lock(mu_);
    for (const auto& [resource, i] : interests_)
      if (!i.registered) to_register.push_back(resource);
    to_unregister.swap(unregister_);
  }
  for (const auto& resource : to_unregister) {
    const value key[] = {resource};
    conn.exec(sql.wakeup_unregister, key);
  }
  bool any = false;
  for (const auto& resource : to_register) {
    const value key[] = {resource};
    const auto r = conn.exec(sql.wakeup_register, key);
    const bool done = !r.rows.empty() && r.rows[0].at(0) && (*r.rows[0][0] == "t" || *r.rows[0][0] == "true");
    if (!done) continue;  // a release is committing: next round
    std::lock_guard lock(mu_);
    auto it = interests_.find(resource);
    if (it == interests_.end()) {
      unregister_.push_back(resource);  // its waiters left meanwhile
      continue;
    }
    it->second.registered = true;
    ++it->second.releases;  // a release before the registration sent nothing: try again now
    any = true;
  }
  if (any) cv_.notify_all();
}

bool wakeup_hub::announced(const std::string& resource) {
  std::lock_guard lock(mu_);
  const auto it = interests_.find(resource);
  return state_ == state::listening && it != interests_.end() &&
         (it->second.registered || db_.sql().wakeup_register.empty());
}

std::optional<std::uint64_t> wakeup_hub::ticket(const std::string& resource) {
  std::lock_guard lock(mu_);
  if (state_ != state::listening) return std::nullopt;
  const auto it = interests_.find(resource);  // not joined: nothing counted for it
  return it == interests_.end() ? 0 : it->second.releases;
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
      // Anything may have been released while no one listened: let every waiter try again. The
      // registrations went with the old connection's session.
      for (auto& [name, i] : interests_) {
        ++i.releases;
        i.registered = false;
      }
      unregister_.clear();
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
        sync_registrations(*conn);
        // Short slices while anyone waits, so that a new waiter's registration follows quickly.
        const bool waiting = [&] {
          std::lock_guard lock(mu_);
          return !interests_.empty() || !unregister_.empty();
        }();
        const auto payloads = source->await(std::chrono::milliseconds(waiting ? 10 : 200));
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
