#include "core/retry_wait.hpp"

#include <algorithm>

#include "core/backoff.hpp"
#include "core/database_impl.hpp"
#include "core/wait_bounds.hpp"

namespace sqllock::detail {

bool retry_until(database_impl& impl, const std::string& resource, std::optional<time_source::time_point> deadline,
                 const retry_wait_steps& steps) {
  return retry_until(impl, std::vector<std::string>{resource}, deadline, steps);
}

bool retry_until(database_impl& impl, const std::vector<std::string>& resources,
                 std::optional<time_source::time_point> deadline, const retry_wait_steps& steps) {
  const caller_deadline bound(deadline);  // no statement of the wait outlives it (plus a grace)
  if (steps.attempt()) return true;
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
    if (deadline && now >= *deadline) return false;
    if (steps.progressed && steps.progressed()) delays.reset();
    auto sleep = std::chrono::duration_cast<time_source::duration>(delays.next());
    if (auto left = steps.lease_remaining())
      sleep = std::min<time_source::duration>(sleep, *left + std::chrono::milliseconds(1));
    if (deadline) sleep = std::min<time_source::duration>(sleep, *deadline - now);
    if (announced)
      wakeups.wait_any(tickets, now + sleep);
    else
      clock.sleep_until(now + sleep);
  }
}

}  // namespace sqllock::detail
