// How often a waiter in a wait queue (fair_lock, rw_lock) checks its turn. Its checks say how many
// entries block it (up to the check's window); the time the queue took to move up so far gives
// the time per hand-off. The head and the one behind it check often, as the backoff after a move
// does, and are woken by releases where they are announced. A waiter further back is not woken by
// releases (one ahead of it does not make it the next): it expects its turn no sooner than one
// hand-off per entry between it and that place and checks about that often, or follows the
// backoff until it has seen the queue move. So the checks per hand-off stay about constant as the
// queue grows, instead of growing with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "core/handle/clock.hpp"
#include "core/wait/retry_wait.hpp"

namespace sqllock::detail {

class queue_pace {
 public:
  // The shortest and longest paced sleep.
  static constexpr std::chrono::milliseconds kMin{5}, kMax{500};

  // Records a check that found `blockers` entries blocking the waiter, at `now`.
  void observe(time_source::time_point now, std::int64_t blockers) noexcept;

  // Whether the last check found fewer blockers than the one before (the queue moved up).
  bool moved() const noexcept { return before_ >= 0 && last_ < before_; }

  // At or next to the head (2 blockers or fewer): the backoff, woken by releases. Further back:
  // not woken by releases, and sleeping the time per hand-off seen so far × its blockers beyond 2,
  // within [kMin, kMax] — the backoff's delay before the queue was seen to move.
  wait_pace pace() const noexcept;

 private:
  time_source::time_point first_at_{}, last_at_{};
  std::int64_t first_ = -1, before_ = -1, last_ = -1;
};

}  // namespace sqllock::detail
