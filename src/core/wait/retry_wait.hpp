// How every leased kind waits between attempts (table_lock, multi_lock, semaphore, fair_lock,
// rw_lock): capped, jittered exponential backoff that never sleeps past the deadline, nor past the
// moment the current holder's lease runs out, and starts again when a queue moved up; where releases are announced (PostgreSQL NOTIFY), a release of the resource
// wakes the waiter at once. The ticket is taken before each attempt, so a release between the
// attempt and the sleep is not missed.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/handle/clock.hpp"

namespace sqllock::detail {

class database_impl;

// How a waiter sleeps after a failed attempt, when it knows better than the backoff: a queue's
// waiter far from the head is not made the next by a release ahead of it, so a release does not
// wake it (`ignore_releases`), and it may expect its turn no sooner than `sleep` (instead of the
// backoff's delay). Either way the sleep still ends at the deadline, at a stop and when the first
// lease ahead runs out.
struct wait_pace {
  bool ignore_releases = false;
  std::optional<std::chrono::milliseconds> sleep;
};

struct retry_wait_steps {
  // One attempt; true when it acquired.
  std::function<bool()> attempt;
  // How long until the holder (or the first of the holders) of the resource runs out of lease;
  // nullopt when nobody holds it. Asked after a failed attempt.
  std::function<std::optional<std::chrono::milliseconds>()> lease_remaining;
  // Optional: whether the failed attempt found the wait shorter than the one before (a queue that
  // moved up). Then the backoff starts again from its first delay, so waiters poll as often as
  // their queue moves, and back off only while it stands still. Asked after a failed attempt.
  std::function<bool()> progressed = nullptr;
  // Optional: how a queue's waiter paces its attempts (core/wait/queue_pace.hpp). Asked after a
  // failed attempt, after `progressed`.
  std::function<wait_pace()> pace = nullptr;
};

// Runs steps.attempt until it succeeds (true), or `deadline` passes or a stop is requested on
// `stop` (false); no deadline and no stop: until it succeeds. A stop ends a sleep at once and is
// checked after every attempt; a deadline already past or a stop already requested leaves one
// attempt. Wakes on releases of `resource`. Throws what the steps throw; a statement of theirs
// still unanswered kDeadlineGrace after the deadline is cut off (driver/statement_bound.hpp).
bool retry_until(database_impl& impl, const std::string& resource, std::optional<time_source::time_point> deadline,
                 const retry_wait_steps& steps, std::stop_token stop = {});

// The same for an attempt on several resources at once (multi_lock): a release of any of them
// wakes the waiter.
bool retry_until(database_impl& impl, const std::vector<std::string>& resources,
                 std::optional<time_source::time_point> deadline, const retry_wait_steps& steps,
                 std::stop_token stop = {});

}  // namespace sqllock::detail
