// How often a waiter in a wait queue (fair_lock, rw_lock) checks its turn. Its checks say how many
// entries block it (up to the check's window); the time the queue took to move up so far gives
// the time per hand-off. The waiters near the head (kNear blockers or fewer) check often, as the
// backoff after a move does, and are woken by releases where they are announced: they keep the
// hand-offs going, each ready when the one before it is granted. A waiter further back is not
// woken by releases (one ahead of it does not make it one of those): it expects to get near no
// sooner than one hand-off per entry between it and there, and checks about that often, or
// follows the backoff until it has seen the queue move. So the checks per hand-off stay about
// constant as the queue grows, instead of growing with it. (With only the head and the next one
// near, a queue of 8 that stalled once stayed stalled: the others slept through the hand-offs,
// saw no move, and backed off further — 275 grants/s became 21.)
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
  // How many blockers a waiter near the head has at most.
  static constexpr std::int64_t kNear = 6;

  // Records a check that found `blockers` entries blocking the waiter, at `now`.
  void observe(time_source::time_point now, std::int64_t blockers) noexcept;

  // Whether the last check found fewer blockers than the one before (the queue moved up).
  bool moved() const noexcept { return before_ >= 0 && last_ < before_; }

  // Near the head (kNear blockers or fewer): the backoff, woken by releases. Further back: not
  // woken by releases, and sleeping the time per hand-off seen so far × its blockers beyond
  // kNear, within [kMin, kMax] — the backoff's delay before the queue was seen to move.
  wait_pace pace() const noexcept;

 private:
  time_source::time_point first_at_{}, last_at_{};
  std::int64_t first_ = -1, before_ = -1, last_ = -1;
};

}  // namespace sqllock::detail
