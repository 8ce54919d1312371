#include "core/wait/queue_pace.hpp"

#include <algorithm>

namespace sqllock::detail {

void queue_pace::observe(time_source::time_point now, std::int64_t blockers) noexcept {
  if (first_ < 0) {
    first_ = blockers;
    first_at_ = now;
  }
  before_ = last_;
  last_ = blockers;
  last_at_ = now;
}

wait_pace queue_pace::pace() const noexcept {
  if (last_ <= kNear) return {};
  wait_pace far{.ignore_releases = true, .sleep = std::nullopt};
  const std::int64_t moved_up = first_ - last_;
  if (moved_up <= 0) return far;
  const auto per_hand_off = (last_at_ - first_at_) / moved_up;
  far.sleep = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(per_hand_off * (last_ - kNear)), kMin,
                         kMax);
  return far;
}

}  // namespace sqllock::detail
