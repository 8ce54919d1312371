// sqllock/deadline.hpp — how the timed waits (try_lock_for, try_lock_until, try_with_…_for) turn
// the caller's timeout or deadline into a std::chrono::steady_clock deadline. Included by the
// lock headers; nothing here is needed directly.
//
// The conversion saturates instead of overflowing: steady_clock counts nanoseconds in 64 bits
// (about 292 years), so std::chrono::hours::max() or a system_clock::time_point::max() deadline
// cannot be added to now() as they are. A timeout beyond the representable range becomes the
// latest time point (the wait lasts as long as lock() would), one below it the earliest (a
// deadline already passed: one attempt without waiting).
#pragma once

#include <chrono>
#include <cmath>
#include <limits>

namespace sqllock::detail {

// Steady-clock ticks as long double: any std::chrono duration converts to it without overflow.
using steady_ticks = std::chrono::duration<long double, std::chrono::steady_clock::period>;

// now + left, rounded up to a whole tick and saturated to the range of steady_clock::time_point.
inline std::chrono::steady_clock::time_point saturating_deadline(std::chrono::steady_clock::time_point now,
                                                                 steady_ticks left) noexcept {
  using clock = std::chrono::steady_clock;
  using rep = clock::rep;
  const long double at = static_cast<long double>(now.time_since_epoch().count());
  const long double target = at + std::ceil(left.count());
  if (std::isnan(target)) return now;
  if (target >= static_cast<long double>(std::numeric_limits<rep>::max())) return clock::time_point::max();
  if (target <= static_cast<long double>(std::numeric_limits<rep>::min())) return clock::time_point::min();
  return clock::time_point(clock::duration(static_cast<rep>(target)));
}

// The steady_clock deadline `timeout` from now.
template <class Rep, class Period>
std::chrono::steady_clock::time_point steady_deadline_after(
    const std::chrono::duration<Rep, Period>& timeout) noexcept {
  return saturating_deadline(std::chrono::steady_clock::now(), std::chrono::duration_cast<steady_ticks>(timeout));
}

// The steady_clock deadline that corresponds to `deadline` on its own clock.
template <class Clock, class Duration>
std::chrono::steady_clock::time_point steady_deadline_at(
    const std::chrono::time_point<Clock, Duration>& deadline) noexcept {
  const auto now = Clock::now();
  const steady_ticks left = std::chrono::duration_cast<steady_ticks>(deadline.time_since_epoch()) -
                            std::chrono::duration_cast<steady_ticks>(now.time_since_epoch());
  return saturating_deadline(std::chrono::steady_clock::now(), left);
}

}  // namespace sqllock::detail
