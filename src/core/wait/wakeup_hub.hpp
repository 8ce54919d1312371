// Wakes lock waiters when a holder releases, where the database can push that news
// (PostgreSQL LISTEN/NOTIFY): a release then costs a waiter one round trip, not a poll period.
//
// One listener thread per handle owns a dedicated connection subscribed to the dialect's wake-up
// channel; releases NOTIFY it with the resource name. Waiters take a ticket before they try, and
// wait until a release of their resource is seen after that ticket (or their own timeout, so
// polling remains the fallback for expiries, which nothing announces).
//
// A release notifies only when some session has registered waiters of its resource
// (dialect_sql::wakeup_register): the listener registers each resource this process waits for on
// its connection, and unregisters it when the last waiter leaves. A registration takes effect a
// moment after the waiter's first attempt began; once it is in place the listener counts it as a
// release of the resource, so the waiter tries again then and misses no release in between.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sqllock::detail {

class database_impl;
class connection;

class wakeup_hub {
 public:
  explicit wakeup_hub(database_impl& db);
  ~wakeup_hub();
  wakeup_hub(const wakeup_hub&) = delete;
  wakeup_hub& operator=(const wakeup_hub&) = delete;

  // Registers interest in `resource` until the matching leave(). Starts the listener the first
  // time and waits (briefly) until it is subscribed.
  void join(const std::string& resource);
  void leave(const std::string& resource);

  // Whether releases of `resource` are announced to this process now: the listener is listening
  // and has registered the resource's waiters (which follows join() by a moment).
  bool announced(const std::string& resource);

  // The current release count seen for `resource`, or nullopt when no listener is running
  // (driver without notifications, or the listener's connection is down): then just poll.
  std::optional<std::uint64_t> ticket(const std::string& resource);

  // Sleeps until a release of `resource` newer than `ticket` is seen, or until `until`.
  void wait(const std::string& resource, std::uint64_t ticket, std::chrono::steady_clock::time_point until);
  // Sleeps until a release newer than its ticket is seen for any of `tickets` (resource, ticket),
  // or until `until` (multi_lock: a release of any name of the set), or a stop request on `stop`.
  void wait_any(const std::vector<std::pair<std::string, std::uint64_t>>& tickets,
                std::chrono::steady_clock::time_point until, std::stop_token stop = {});

 private:
  void listen(std::stop_token stop);

  database_impl& db_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  struct interest {
    int waiters = 0;
    std::uint64_t releases = 0;
    bool registered = false;  // on the listener's current connection
  };
  // Registers the interests not registered yet, and unregisters the resources nobody waits for
  // any more; on the listener's thread, with its connection.
  void sync_registrations(connection& conn);

  std::map<std::string, interest> interests_;
  std::vector<std::string> unregister_;  // left by their last waiter while registered
  enum class state { idle, starting, listening, down } state_ = state::idle;
  std::jthread thread_;  // last: joins before the members it uses go away
};

}  // namespace sqllock::detail
