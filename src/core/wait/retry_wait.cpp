#include "core/wait/retry_wait.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "core/wait/backoff.hpp"
#include "core/handle/database_impl.hpp"
#include "core/wait/wait_bounds.hpp"

namespace sqllock::detail {
namespace {

// Sleeps until `until` or until a stop is requested, whichever comes first.
void sleep_unless_stopped(time_source& clock, time_source::time_point until, const std::stop_token& stop) {
  if (!stop.stop_possible()) return clock.sleep_until(until);
  std::mutex m;
  std::condition_variable_any cv;  // nobody notifies it: the clock wakes at `until`, the token at a stop
  std::unique_lock lock(m);
  while (!stop.stop_requested() && clock.now() < until) clock.wait_until(cv, lock, stop, until);
}

}  // namespace

bool retry_until(database_impl& impl, const std::string& resource, std::optional<time_source::time_point> deadline,
                 const retry_wait_steps& steps, std::stop_token stop) {
  return retry_until(impl, std::vector<std::string>{resource}, deadline, steps, std::move(stop));
}

bool retry_until(database_impl& impl, const std::vector<std::string>& resources,
                 std::optional<time_source::time_point> deadline, const retry_wait_steps& steps, std::stop_token stop) {
  const caller_deadline bound(deadline);  // no statement of the wait outlives it (plus a grace)
  if (steps.attempt()) return true;
  if (stop.stop_requested()) return false;
  auto& wakeups = impl.wakeups();
  auto& clock = impl.time();
  struct interest_guard {
    wakeup_hub& hub;
    const std::vector<std::string>& resources;
    std::size_t joined = 0;
    ~interest_guard() {
      for (std::size_t i = 0; i < joined; ++i) hub.leave(resources[i]);
    }
  } interest{wakeups, resources};
  for (const auto& resource : resources) {
    wakeups.join(resource);
    ++interest.joined;
  }
  backoff delays(std::chrono::milliseconds(5), std::chrono::milliseconds(500));
  std::vector<std::pair<std::string, std::uint64_t>> tickets;
  while (true) {
    bool announced = true;  // every resource has a ticket: releases are announced
    tickets.clear();
    for (const auto& resource : resources) {  // before the attempt: no release can slip by
      if (const auto ticket = wakeups.ticket(resource))
        tickets.emplace_back(resource, *ticket);
      else
        announced = false;
    }
    if (steps.attempt()) return true;
    const auto now = clock.now();
    if ((deadline && now >= *deadline) || stop.stop_requested()) return false;
    if (steps.progressed && steps.progressed()) delays.reset();
    auto sleep = std::chrono::duration_cast<time_source::duration>(delays.next());
    if (steps.pace) {
      const auto paced = steps.pace();
      if (paced.sleep) sleep = *paced.sleep;
      if (paced.ignore_releases) announced = false;
    }
    if (auto left = steps.lease_remaining())
      sleep = std::min<time_source::duration>(sleep, *left + std::chrono::milliseconds(1));
    if (deadline) sleep = std::min<time_source::duration>(sleep, *deadline - now);
    if (announced)
      wakeups.wait_any(tickets, now + sleep, stop);
    else
      sleep_unless_stopped(clock, now + sleep, stop);
  }
}

}  // namespace sqllock::detail
