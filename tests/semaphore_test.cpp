// sqllock::semaphore on every driver × dialect pair: N slots per name and never more holders,
// owned and leased permits (renewed, lost, taken over), fences per slot, waiting, callers that
// disagree about N, bad input, and real processes that never see more than N holders at once.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <set>
#include <sstream>
#include <thread>

#include "sqllock/error.hpp"
#include "sqllock/reaper.hpp"
#include "sqllock/semaphore.hpp"
#include "sqllock/status.hpp"
#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

class SemaphoreTest : public LockTableTest {
 protected:
  std::int64_t permit_rows(const database& db, const std::string& where = "") const {
    return std::stoll(sql(db, "SELECT COUNT(*) FROM " + table_ + "_permits" + (where.empty() ? "" : " WHERE " + where))
                          .rows.at(0)
                          .at(0)
                          .value());
  }
  static semaphore_options leased(std::chrono::milliseconds ttl, bool renew) {
    semaphore_options o;
    o.ttl = ttl;
    o.auto_renew = renew;
    return o;
  }
};

TEST_P(SemaphoreTest, GrantsNPermitsOnDistinctSlotsThenRefuses) {
  auto db = open();
  semaphore sem(db, "encoder", 3);
  std::vector<permit> held;
  std::set<std::int64_t> slots;
  for (int i = 0; i < 3; ++i) {
    auto p = sem.try_acquire();
    ASSERT_TRUE(p) << "permit " << i;
    EXPECT_TRUE(p->holds());
    EXPECT_GT(p->fence(), 0);
    slots.insert(p->slot());
    held.push_back(std::move(*p));
  }
  EXPECT_EQ(slots, (std::set<std::int64_t>{0, 1, 2}));
  EXPECT_FALSE(sem.try_acquire()) << "a fourth permit of three";
  auto other = open();
  EXPECT_FALSE(semaphore(other, "encoder", 3).try_acquire()) << "another handle is refused too";
  EXPECT_TRUE(semaphore(other, "decoder", 3).try_acquire()) << "another name has its own slots";
  EXPECT_EQ(permit_rows(db, "resource = 'encoder'"), 3);
}

TEST_P(SemaphoreTest, ReleaseFreesTheSlotAndItsNextGrantHasAHigherFence) {
  auto db = open();
  semaphore sem(db, "one", 1);
  auto first = sem.try_acquire();
  ASSERT_TRUE(first);
  const auto fence = first->fence();
  EXPECT_EQ(first->slot(), 0);
  first->release();
  EXPECT_FALSE(first->holds());
  EXPECT_THROW((void)first->fence(), not_held) << "a released permit holds nothing";
  EXPECT_THROW(first->release(), not_held) << "a second release is refused, not a second free slot";
  EXPECT_EQ(permit_rows(db), 0);
  auto second = semaphore(open(), "one", 1).try_acquire();
  ASSERT_TRUE(second);
  EXPECT_GT(second->fence(), fence);
}

TEST_P(SemaphoreTest, DestroyingOrMovingAPermitReleasesItExactlyOnce) {
  auto db = open();
  semaphore sem(db, "pool", 2);
  {
    auto p = sem.try_acquire();
    ASSERT_TRUE(p);
    permit moved = std::move(*p);
    EXPECT_FALSE(p->holds()) << "moved from";
    EXPECT_TRUE(moved.holds());
    EXPECT_EQ(permit_rows(db), 1);
    permit other;
    other = std::move(moved);
    EXPECT_TRUE(other.holds());
  }
  EXPECT_EQ(permit_rows(db), 0) << "the destructor gave it back";
  auto a = sem.try_acquire();
  auto b = sem.try_acquire();
  ASSERT_TRUE(a && b);
  *a = std::move(*b);  // releases a's permit, takes b's
  EXPECT_EQ(permit_rows(db), 1);
  EXPECT_TRUE(a->holds());
}

TEST_P(SemaphoreTest, AnExpiredPermitIsTakenOverAndItsLateHolderCannotReleaseIt) {
  auto db = open();
  semaphore first(db, "lease", 1, leased(200ms, false));
  auto late = first.try_acquire();
  ASSERT_TRUE(late);
  const auto fence = late->fence();
  std::this_thread::sleep_for(400ms);
  EXPECT_FALSE(late->holds()) << "the lease ran out by the local clock too";
  auto next = semaphore(open(), "lease", 1).try_acquire();
  ASSERT_TRUE(next) << "the expired slot is taken over";
  EXPECT_EQ(next->slot(), 0);
  EXPECT_GT(next->fence(), fence);
  EXPECT_THROW(late->release(), not_held);
  EXPECT_EQ(permit_rows(db), 1) << "the late release left the new holder's row alone";
  EXPECT_TRUE(next->holds());
}

TEST_P(SemaphoreTest, RenewalKeepsAPermitPastItsTtlAndOneStatementRenewsLocksToo) {
  auto db = open();
  semaphore sem(db, "renewed", 1, leased(300ms, true));
  table_lock_options lo;
  lo.ttl = 300ms;
  table_lock lock(db, "renewed-lock", lo);
  auto p = sem.try_acquire();
  ASSERT_TRUE(p);
  ASSERT_TRUE(lock.try_lock());
  std::this_thread::sleep_for(1200ms);
  EXPECT_TRUE(p->holds()) << "renewed by the handle's watchdog";
  EXPECT_TRUE(lock.holds()) << "the lock row of the same handle too";
  EXPECT_FALSE(p->lost_token().stop_requested());
  auto other = open();
  EXPECT_FALSE(semaphore(other, "renewed", 1).try_acquire()) << "still held on the server";
  lock.unlock();
}

TEST_P(SemaphoreTest, APermitWhoseRowIsDeletedIsReportedLost) {
  auto db = open();
  std::atomic<int> lost{0};
  auto o = leased(300ms, true);
  o.on_lost = [&] { ++lost; };
  semaphore sem(db, "doomed", 2, o);
  auto p = sem.try_acquire();
  ASSERT_TRUE(p);
  sql(db, "DELETE FROM " + table_ + "_permits");
  const auto until = clock_type::now() + scaled(3s);
  while (!p->lost_token().stop_requested() && clock_type::now() < until) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(p->lost_token().stop_requested());
  EXPECT_EQ(lost.load(), 1);
  EXPECT_FALSE(p->holds());
  EXPECT_THROW(p->release(), not_held);
}

TEST_P(SemaphoreTest, ATimedWaitGetsTheSlotAReleaseFreesAndOtherwiseTimesOut) {
  auto db = open();
  semaphore sem(db, "wait", 1);
  auto held = sem.try_acquire();
  ASSERT_TRUE(held);
  auto other = open();
  semaphore waiting(other, "wait", 1);
  const auto t0 = clock_type::now();
  EXPECT_FALSE(waiting.try_acquire_for(300ms));
  const auto waited = clock_type::now() - t0;
  EXPECT_GE(waited, 300ms);
  EXPECT_LT(waited, scaled(2s));
  std::thread releaser([&] {
    std::this_thread::sleep_for(200ms);
    held->release();
  });
  auto got = waiting.try_acquire_for(scaled(10s));
  releaser.join();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->slot(), 0);
  EXPECT_FALSE(waiting.try_acquire_for(std::chrono::hours::min())) << "a negative wait is one attempt";
}

TEST_P(SemaphoreTest, CallersThatDisagreeAboutNNeverExceedTheLargestN) {
  auto db = open();
  semaphore two(db, "mixed", 2);
  auto a = two.try_acquire();
  auto b = two.try_acquire();
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(semaphore(db, "mixed", 1).try_acquire()) << "N = 1: slot 0 is busy";
  auto c = semaphore(db, "mixed", 3).try_acquire();
  ASSERT_TRUE(c) << "N = 3: slot 2 is free";
  EXPECT_EQ(c->slot(), 2);
  EXPECT_FALSE(semaphore(db, "mixed", 3).try_acquire());
  EXPECT_EQ(permit_rows(db, "resource = 'mixed'"), 3);
  EXPECT_EQ(permit_rows(db, "resource = 'mixed' AND permits = 3"), 1) << "each row records the N it was taken with";
}

TEST_P(SemaphoreTest, BadInputIsRefusedBeforeAnythingIsSent) {
  auto db = open();
  for (const std::int64_t n : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{10001}, INT64_MAX, INT64_MIN})
    EXPECT_THROW(semaphore(db, "n", n), invalid_argument) << n;
  EXPECT_THROW(semaphore(db, "", 1), invalid_argument);
  EXPECT_THROW(semaphore(db, std::string(256, 'x'), 1), invalid_argument);
  EXPECT_THROW(semaphore(db, std::string("a\0b", 3), 1), invalid_argument);
  EXPECT_THROW(semaphore(db, "ttl", 1, leased(0ms, true)), invalid_argument);
  EXPECT_NO_THROW(semaphore(db, std::string(255, 'x'), 10000));
  permit none;
  EXPECT_FALSE(none.holds());
  EXPECT_THROW(none.release(), not_held);
  EXPECT_THROW((void)none.slot(), not_held);
  EXPECT_THROW((void)none.lost_token(), not_held);
  EXPECT_EQ(permit_rows(db), 0);
}

TEST_P(SemaphoreTest, AWideSemaphoreGrantsEveryPermit) {
  auto db = open();
  semaphore sem(db, "wide", 40);
  std::vector<permit> held;
  for (int i = 0; i < 40; ++i) {
    auto p = sem.try_acquire();
    ASSERT_TRUE(p) << i;
    held.push_back(std::move(*p));
  }
  EXPECT_FALSE(sem.try_acquire());
  std::set<std::int64_t> slots;
  for (const auto& p : held) slots.insert(p.slot());
  EXPECT_EQ(slots.size(), 40u);
  EXPECT_EQ(*slots.rbegin(), 39);
}

TEST_P(SemaphoreTest, StatusListsPermitsWithSlotAndNAndTheReaperDeletesExpiredOnes) {
  auto db = open();
  semaphore sem(db, "pool", 3);
  auto live = sem.try_acquire();
  auto doomed = semaphore(db, "pool", 3, leased(100ms, false)).try_acquire();
  ASSERT_TRUE(live && doomed);
  const auto listed = list_permits(db);
  ASSERT_EQ(listed.size(), 2u);
  for (const auto& p : listed) {
    EXPECT_EQ(p.resource, "pool");
    EXPECT_EQ(p.permits, 3);
    EXPECT_EQ(p.count, 1);
    EXPECT_GT(p.fence, 0);
    EXPECT_EQ(p.holder_pid, ::getpid());
  }
  EXPECT_LT(listed[0].slot, listed[1].slot) << "ordered by slot";
  EXPECT_EQ(find_permits(db, "pool").size(), 2u);
  EXPECT_TRUE(find_permits(db, "other").empty());
  EXPECT_TRUE(list_locks(db).empty()) << "permits are not lock rows";
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(reap(db), 1u) << "the expired permit, not the live one";
  const auto left = find_permits(db, "pool");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].slot, live->slot());
  EXPECT_TRUE(live->holds());
}

TEST_P(SemaphoreTest, ForcedReleaseFreesEverySlotAndTheHoldersLearnTheyLostThem) {
  auto db = open();
  semaphore sem(db, "stuck", 2, leased(300ms, true));
  auto a = sem.try_acquire();
  auto b = sem.try_acquire();
  ASSERT_TRUE(a && b);
  auto ops = open();
  const auto gone = force_release_permits(ops, "stuck");
  EXPECT_EQ(gone.size(), 2u);
  EXPECT_TRUE(force_release_permits(ops, "stuck").empty());
  auto next = semaphore(ops, "stuck", 2).try_acquire();
  ASSERT_TRUE(next) << "a freed slot is granted at once";
  EXPECT_GT(next->fence(), std::max(gone[0].fence, gone[1].fence));
  const auto until = clock_type::now() + scaled(3s);
  while (!(a->lost_token().stop_requested() && b->lost_token().stop_requested()) && clock_type::now() < until)
    std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(a->lost_token().stop_requested());
  EXPECT_TRUE(b->lost_token().stop_requested());
  EXPECT_THROW(find_permits(ops, ""), invalid_argument);
}

// N threads, each with its own handle, released together by a barrier, each try_acquire() once
// on N free permits: every one of them must get one, on distinct slots. Concurrent attempts often
// pick the same free slot; the one that loses it must take another free slot, not give up (a
// nullopt means all N are held by live permits). Many rounds, since the race is in the timing;
// 32 threads, since the more racers the longer the chains of lost picks. Before the fix (an
// acquire gave up after 4 lost picks) 21–36 rounds in 150 failed on MariaDB, 0–1 on PostgreSQL.
TEST_P(SemaphoreTest, RacingTryAcquiresOnNFreePermitsAllGetOne) {
  constexpr int kThreads = 32;
  constexpr int kRounds = 150;
  std::vector<database> handles;
  for (int i = 0; i < kThreads; ++i) handles.push_back(open());
  std::vector<std::vector<std::int64_t>> slots(kRounds, std::vector<std::int64_t>(kThreads, -1));  // -1: nullopt
  std::vector<std::string> errors(kThreads);
  std::barrier go(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      semaphore sem(handles[t], "racing", kThreads);
      for (int r = 0; r < kRounds; ++r) {
        go.arrive_and_wait();  // every permit of the last round is released
        std::optional<permit> p;
        try {
          p = sem.try_acquire();
        } catch (const std::exception& e) {
          if (errors[t].empty()) errors[t] = "round " + std::to_string(r) + ": " + e.what();
        }
        if (p) slots[r][t] = p->slot();
        go.arrive_and_wait();  // every thread has tried: the permits are given back only now
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  int failed = 0;
  std::ostringstream report;
  for (int r = 0; r < kRounds; ++r) {
    std::set<std::int64_t> distinct;
    int granted = 0;
    for (const auto s : slots[r])
      if (s >= 0) ++granted, distinct.insert(s);
    EXPECT_EQ(distinct.size(), static_cast<std::size_t>(granted)) << "round " << r << ": two permits on one slot";
    if (granted != kThreads) {
      ++failed;
      report << " round " << r << ": " << granted << " granted;";
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << kRounds
                       << " rounds left a thread without a permit while one was free:" << report.str();
  EXPECT_EQ(permit_rows(open()), 0);
}

// Processes race for 2 permits; a counter in memory shared by all of them (not the database)
// records how many hold at once. The peak must never pass 2, and every process gets its turns.
TEST_P(SemaphoreTest, ProcessesNeverHoldMoreThanNPermitsAtOnce) {
  struct shared_counts {
    std::atomic<int> active;
    std::atomic<int> peak;
    std::atomic<int> grants;
  };
  void* mem = ::mmap(nullptr, sizeof(shared_counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* counts = new (mem) shared_counts{};
  constexpr int kProcesses = 6;
  constexpr int kRounds = 15;
  process_group group;
  for (int i = 0; i < kProcesses; ++i) {
    group.spawn([&, counts]() -> int {
      auto db = open();
      semaphore sem(db, "race", 2);
      for (int r = 0; r < kRounds; ++r) {
        auto p = sem.try_acquire_for(60s);
        if (!p) return 2;
        const int now = counts->active.fetch_add(1) + 1;
        int peak = counts->peak.load();
        while (now > peak && !counts->peak.compare_exchange_weak(peak, now)) {
        }
        counts->grants.fetch_add(1);
        std::this_thread::sleep_for(2ms);
        counts->active.fetch_sub(1);
        p->release();
      }
      return 0;
    });
  }
  group.start();
  EXPECT_EQ(group.wait_all(), kProcesses);
  EXPECT_EQ(counts->grants.load(), kProcesses * kRounds);
  EXPECT_LE(counts->peak.load(), 2) << "more holders than permits";
  EXPECT_EQ(counts->peak.load(), 2) << "both permits were in use at some point";
  ::munmap(mem, sizeof(shared_counts));
  EXPECT_EQ(permit_rows(open()), 0);
}

INSTANTIATE_TEST_SUITE_P(Targets, SemaphoreTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

// ---- with a server: grants slowed by a trigger

class SemaphoreServerTest : public SemaphoreTest {};

TEST_P(SemaphoreServerTest, AGrantThatArrivesAfterItsLeaseIsGivenBackAndReportedAsNone) {
  // Every permit row inserted sleeps 400 ms before its statement returns: the grant comes back
  // past its 300 ms lease, which may have run out and been taken over meanwhile.
  pause_inserts_into(table_ + "_permits", "0.4");
  auto db = open();
  semaphore late(db, "late", 2, leased(300ms, false));
  const auto start = clock_type::now();
  EXPECT_FALSE(late.try_acquire()) << "a grant read 400 ms after it was sent cannot still hold a 300 ms lease";
  EXPECT_GE(clock_type::now() - start, 400ms) << "the trigger did not pause the grant";
  EXPECT_EQ(permit_rows(db), 0) << "the late grant's row is deleted, not left to expire";
}

INSTANTIATE_TEST_SUITE_P(ServerTargets, SemaphoreServerTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
