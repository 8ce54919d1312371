#include "core/wait/backoff.hpp"

#include <algorithm>

namespace sqllock::detail {

backoff::backoff(std::chrono::milliseconds initial, std::chrono::milliseconds cap)
    : initial_(initial), current_(initial), cap_(cap), rng_(std::random_device{}()) {}

std::chrono::microseconds backoff::next() {
  const auto upper = current_.count();
  std::uniform_int_distribution<long long> pick(upper / 2, upper);
  const std::chrono::microseconds delay(pick(rng_));
  current_ = std::min(cap_, current_ * 2);
  return delay;
}

}  // namespace sqllock::detail
