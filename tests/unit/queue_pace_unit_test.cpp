// How a queued waiter paces its checks (core/wait/queue_pace.hpp): the waiters near the head are
// left to the backoff, which restarts at each move, and woken by releases; a waiter further back is
// not woken by releases and sleeps about one hand-off per entry between it and the near ones.
// Pure arithmetic on given times.
#include <gtest/gtest.h>

#include <chrono>

#include "core/wait/queue_pace.hpp"

namespace test {
namespace {

using namespace std::chrono_literals;
using sqllock::detail::queue_pace;
const sqllock::detail::time_source::time_point t0{};

TEST(QueuePaceTest, TheWaitersNearTheHeadAreLeftToTheBackoff) {
  queue_pace p;
  p.observe(t0, 14);
  p.observe(t0 + 80ms, queue_pace::kNear);
  EXPECT_TRUE(p.moved());
  EXPECT_FALSE(p.pace().ignore_releases);
  EXPECT_EQ(p.pace().sleep, std::nullopt);
  p.observe(t0 + 90ms, 1);
  EXPECT_FALSE(p.pace().ignore_releases);
  EXPECT_EQ(p.pace().sleep, std::nullopt);
}

TEST(QueuePaceTest, AWaiterFurtherBackSleepsOneHandOffPerEntryBetweenItAndTheNearOnes) {
  queue_pace p;
  p.observe(t0, 14);
  p.observe(t0 + 100ms, 12);  // two hand-offs in 100 ms: 50 ms each
  EXPECT_TRUE(p.pace().ignore_releases);
  EXPECT_EQ(p.pace().sleep, std::chrono::milliseconds(50 * (12 - queue_pace::kNear)));
}

TEST(QueuePaceTest, BeforeTheQueueMovesAWaiterFarBackFollowsTheBackoffButIgnoresReleases) {
  queue_pace p;
  p.observe(t0, 10);
  EXPECT_FALSE(p.moved());
  EXPECT_TRUE(p.pace().ignore_releases);
  EXPECT_EQ(p.pace().sleep, std::nullopt);
  p.observe(t0 + 1s, 10);
  EXPECT_FALSE(p.moved());
  EXPECT_EQ(p.pace().sleep, std::nullopt);
}

TEST(QueuePaceTest, MovedSaysOnlyThatTheLastCheckFoundFewerBlockers) {
  queue_pace p;
  p.observe(t0, 10);
  p.observe(t0 + 10ms, 9);
  EXPECT_TRUE(p.moved());
  p.observe(t0 + 20ms, 9);
  EXPECT_FALSE(p.moved());
}

TEST(QueuePaceTest, ThePaceStaysWithinItsBounds) {
  queue_pace fast;
  fast.observe(t0, 30);
  fast.observe(t0 + 1ms, 10);
  EXPECT_EQ(fast.pace().sleep, queue_pace::kMin);
  queue_pace slow;
  slow.observe(t0, 30);
  slow.observe(t0 + 10s, 29);
  EXPECT_EQ(slow.pace().sleep, queue_pace::kMax);
}

}  // namespace
}  // namespace test
