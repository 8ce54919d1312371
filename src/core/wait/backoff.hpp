// Capped exponential backoff with jitter for lock waits.
#pragma once

#include <chrono>
#include <random>

namespace sqllock::detail {

class backoff {
 public:
  // First delay `initial`, doubling per attempt up to `cap`; each delay is drawn uniformly from
  // [delay/2, delay] so that waiters released together do not retry in lockstep.
  backoff(std::chrono::milliseconds initial, std::chrono::milliseconds cap);

  // The next delay to sleep.
  std::chrono::microseconds next();

  // Starts again from `initial` (the jitter's generator goes on).
  void reset() noexcept { current_ = initial_; }

 private:
  std::chrono::microseconds initial_;
  std::chrono::microseconds current_;
  std::chrono::microseconds cap_;
  std::minstd_rand rng_;
};

}  // namespace sqllock::detail
