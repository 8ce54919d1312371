// The table_lock lease rules on a fake clock and a scripted server: renewal every third of the
// lease, orphan deletion, loss at the lease deadline, the bookkeeping behind the GREATEST rule,
// the late-grant rule, and the lock wait's backoff. No server; each test takes milliseconds of
// real time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>

#include "core/wait/backoff.hpp"
#include "core/lease/lease_registry.hpp"
#include "sqllock/error.hpp"
#include "sqllock/table_lock.hpp"
#include "unit/fake_handle.hpp"
#include "unit/gate.hpp"

namespace test {
namespace {

using namespace std::chrono_literals;
using sqllock::table_lock;
using sqllock::table_lock_options;

// The lock table of one fake server: grants free or own rows, renews what the handle holds. Its
// state outlives it: the handle's watchdog, destroyed after it, may still be answered.
class lease_rows {
 public:
  explicit lease_rows(fake_handle& h) {
    h.server->on(h.sql().acquire, [s = s_](std::span<const d::value> p) {
      std::lock_guard lock(s->mu);
      auto& row = s->rows[text(p[0])];
      if (!row.owner.empty() && row.owner != text(p[1])) return rows({});
      if (row.owner.empty()) row = {text(p[1]), ++s->fences, 0};
      ++row.count;
      // The process pauses between the server's grant and its reading of it.
      if (auto* c = s->late_by_clock.load()) c->advance(s->late_by);
      return rows({{std::to_string(row.count), std::to_string(row.fence)}});
    });
    h.server->on(h.sql().release_delete, [s = s_](std::span<const d::value> p) {
      if (s->releases_fail) throw sqllock::connection_error("fake: the network is down");
      std::lock_guard lock(s->mu);
      auto it = s->rows.find(text(p[0]));
      if (it == s->rows.end() || it->second.owner != text(p[1]) || std::to_string(it->second.fence) != text(p[2]))
        return rows({});
      s->rows.erase(it);
      return rows({{"1"}});
    });
    h.server->on(h.sql().release_decrement, [s = s_](std::span<const d::value> p) {
      std::lock_guard lock(s->mu);
      auto it = s->rows.find(text(p[0]));
      if (it == s->rows.end() || it->second.owner != text(p[1]) || std::to_string(it->second.fence) != text(p[2]) ||
          std::to_string(it->second.count) != text(p[3]))
        return rows({}, 0);
      --it->second.count;
      return rows({}, 1);
    });
    h.server->on(h.sql().renew, [s = s_](std::span<const d::value>) {
      const int n = ++s->renewals;
      if (auto* g = s->renew_gate.load()) g->wait();
      if (n > s->fail_after) throw sqllock::connection_error("fake: the network is down");
      std::lock_guard lock(s->mu);
      std::vector<d::row> out;
      for (const auto& [resource, row] : s->rows)
        if (!s->hidden) out.push_back({resource, row.owner, std::to_string(row.fence)});
      for (const auto& extra : s->extra) out.push_back(extra);
      return rows(std::move(out));
    });
    h.server->on(h.sql().lease_remaining, [s = s_](std::span<const d::value>) {
      std::lock_guard lock(s->mu);
      return s->remaining_ms < 0 ? rows({}) : rows({{std::to_string(s->remaining_ms)}});
    });
  }

  // A row another owner holds (every acquire of `resource` is refused); its lease has `ms` left,
  // or none is reported when negative.
  void held_elsewhere(const std::string& resource, long ms) {
    std::lock_guard lock(s_->mu);
    s_->rows[resource] = {"someone-else", ++s_->fences, 1};
    s_->remaining_ms = ms;
  }
  // The renewal also returns this row (one the handle renews but holds no more).
  void also_renewed(d::row r) {
    std::lock_guard lock(s_->mu);
    s_->extra.push_back(std::move(r));
  }
  // Every grant reaches the handle `by` later on `clock` (nullptr: at once).
  void grants_arrive_late(fake_clock* clock, std::chrono::milliseconds by = {}) {
    s_->late_by = by;
    s_->late_by_clock = clock;
  }
  // Deleting releases fail (with a broken connection).
  void releases_fail(bool fail) { s_->releases_fail = fail; }
  // The rows of `resource` (0 or 1) and, when there is one, its fence and count.
  std::tuple<bool, std::int64_t, std::int64_t> row_of(const std::string& resource) {
    std::lock_guard lock(s_->mu);
    const auto it = s_->rows.find(resource);
    if (it == s_->rows.end() || it->second.owner.empty()) return {false, 0, 0};
    return {true, it->second.fence, it->second.count};
  }
  // Renewals after the n-th fail (with a broken connection).
  void renewals_fail_after(int n) { s_->fail_after = n; }
  void renewals_miss_rows(bool miss) { s_->hidden = miss; }
  void renewals_wait_at(gate* g) { s_->renew_gate = g; }

 private:
  struct row {
    std::string owner;
    std::int64_t fence = 0;
    std::int64_t count = 0;
  };
  struct state {
    std::mutex mu;
    std::map<std::string, row> rows;
    std::int64_t fences = 6;
    long remaining_ms = -1;
    std::vector<d::row> extra;
    std::atomic<int> renewals{0};
    std::atomic<int> fail_after{1 << 30};
    std::atomic<bool> hidden{false};
    std::atomic<gate*> renew_gate{nullptr};
    std::atomic<fake_clock*> late_by_clock{nullptr};
    std::chrono::milliseconds late_by{};
    std::atomic<bool> releases_fail{false};
  };
  std::shared_ptr<state> s_ = std::make_shared<state>();
};

// Records when (on the fake clock) the hold was declared lost.
struct loss_probe {
  explicit loss_probe(fake_clock& c) : clock(c) {}
  std::function<void()> callback() {
    return [this] {
      at = clock.now();
      lost = true;
    };
  }
  fake_clock& clock;
  std::atomic<bool> lost{false};
  std::atomic<fake_clock::time_point> at{};
};

table_lock_options lease(std::chrono::milliseconds ttl, std::function<void()> on_lost = {}) {
  table_lock_options o;
  o.ttl = ttl;
  o.on_lost = std::move(on_lost);
  o.on_unlock_error = [](const std::exception&) {};
  return o;
}

// A handle on a fake lock table, and a lock on "job" whose loss is recorded.
class LeaseUnitTest : public ::testing::Test {
 protected:
  // The lock with lease `ttl`, taken once; `acquired` is when (fake time) its acquire was sent.
  table_lock& hold(std::chrono::milliseconds ttl) {
    lock_ = std::make_unique<table_lock>(h.db, "job", lease(ttl, probe.callback()));
    acquired = h.clock->now();
    EXPECT_TRUE(lock_->try_lock());
    return *lock_;
  }

  fake_handle h;
  lease_rows server{h};
  loss_probe probe{*h.clock};
  fake_clock::time_point acquired;

 private:
  std::unique_ptr<table_lock> lock_;
};

TEST_F(LeaseUnitTest, RenewsEveryThirdOfTheLeaseWhileHeldAndStopsAfterRelease) {
  auto& l = hold(3s);
  const auto& renew = h.sql().renew;
  h.clock->advance(950ms);
  EXPECT_EQ(h.server->count(renew), 0u) << "renewed before a third of the lease";
  h.clock->advance(100ms);
  EXPECT_TRUE(h.server->await(renew, 1)) << "no renewal at a third of the lease";
  h.clock->advance(9s, 25ms);
  // Ten periods of 1 s: ten renewals, fewer when a starved watchdog sends late (the next period
  // starts at its send), never more.
  const auto renewals = h.server->count(renew);
  EXPECT_GE(renewals, 8u);
  EXPECT_LE(renewals, 11u);
  EXPECT_TRUE(l.holds()) << "renewed leases never run out";
  l.release();
  // A renewal the watchdog had begun before the release may still arrive (the watchdog runs in
  // real time and may be late on a busy machine); three more lease thirds must bring no other.
  const auto at_release = h.server->count(renew);
  h.clock->advance(3s, 100ms);
  EXPECT_LE(h.server->count(renew), at_release + 1) << "renewals went on after the release";
  EXPECT_TRUE(h.server->unexpected().empty());
}

TEST_F(LeaseUnitTest, DeletesARowItRenewsThatNoHoldStandsBehind) {
  auto& l = hold(3s);
  server.also_renewed({"orphan", "handle/t:1", "9"});
  h.clock->advance(1050ms);
  ASSERT_TRUE(h.server->await(h.sql().release_delete, 1)) << "the orphan was not deleted";
  const auto calls = h.server->calls();
  std::vector<std::string> deleted;
  for (const auto& c : calls)
    if (c.sql == h.sql().release_delete) deleted.push_back(text(c.params[0]) + "/" + text(c.params[2]));
  EXPECT_EQ(deleted, std::vector<std::string>{"orphan/9"}) << "only the orphan is deleted, by its fence";
  EXPECT_TRUE(l.holds());
}

TEST_F(LeaseUnitTest, AGrantReadAfterItsLeaseRanOutIsGivenBackByItsFenceAndCountsAsRefused) {
  table_lock l(h.db, "job", lease(3s));
  server.grants_arrive_late(h.clock.get(), 3s);
  EXPECT_FALSE(l.try_lock()) << "a grant that may have run out (and been taken over) was kept";
  EXPECT_FALSE(l.holds());
  EXPECT_EQ(std::get<0>(server.row_of("job")), false) << "the late grant's row was not given back";
  std::vector<std::string> deleted;
  for (const auto& c : h.server->calls())
    if (c.sql == h.sql().release_delete) deleted.push_back(text(c.params[0]) + "/" + text(c.params[2]));
  EXPECT_EQ(deleted, std::vector<std::string>{"job/7"}) << "given back by owner and fence";

  server.grants_arrive_late(nullptr);
  ASSERT_TRUE(l.try_lock());
  EXPECT_EQ(l.fence(), 8);
  l.unlock();
}

TEST_F(LeaseUnitTest, ALateGrantThatCannotBeGivenBackThrowsAndIsNeverBuiltOnLater) {
  table_lock l(h.db, "job", lease(3s));
  server.grants_arrive_late(h.clock.get(), 3s);
  server.releases_fail(true);
  EXPECT_THROW((void)l.try_lock(), sqllock::connection_error);
  EXPECT_FALSE(l.holds());
  EXPECT_EQ(server.row_of("job"), std::make_tuple(true, std::int64_t{7}, std::int64_t{1})) << "the row outlives it";

  // The row is live and this owner's, but no hold stands behind it: the next acquire, which
  // re-enters it (count 2), deletes it by its fence and takes the name afresh.
  server.grants_arrive_late(nullptr);
  server.releases_fail(false);
  ASSERT_TRUE(l.try_lock());
  EXPECT_EQ(l.fence(), 8) << "the new hold built on the row of a grant it had given up";
  EXPECT_EQ(server.row_of("job"), std::make_tuple(true, std::int64_t{8}, std::int64_t{1}));
  l.unlock();
}

TEST_F(LeaseUnitTest, AHoldIsLostWhenRenewalsFailUntilItsLeaseRunsOut) {
  auto& l = hold(3s);
  const auto token = l.lost_token();
  const auto deadline = d::lease_deadline(acquired, 3s);
  server.renewals_fail_after(0);
  h.clock->advance(deadline - h.clock->now() - 50ms);
  EXPECT_GE(h.server->count(h.sql().renew), 5u) << "a failed renewal is retried every 200 ms";
  EXPECT_FALSE(probe.lost) << "lost before its lease ran out";
  EXPECT_TRUE(l.holds());
  h.clock->advance(100ms);
  ASSERT_TRUE(eventually([&] { return probe.lost.load(); })) << "not lost when its lease ran out";
  EXPECT_GE(probe.at.load(), deadline);
  EXPECT_LE(probe.at.load(), deadline + 50ms);
  EXPECT_LT(probe.at.load(), acquired + 3s) << "told no earlier than the server could grant the lock again";
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(l.holds());
  EXPECT_THROW(l.release(), sqllock::not_held);
}

// A silently cut or stalled network: the renewal statement never answers. The hold is lost at its
// local deadline all the same, and the answer that comes at last does not bring it back.
TEST_F(LeaseUnitTest, ARenewalThatNeverAnswersLosesTheHoldAtItsDeadlineAndALateAnswerDoesNotReviveIt) {
  auto& l = hold(3s);
  const auto token = l.lost_token();
  const auto deadline = d::lease_deadline(acquired, 3s);
  gate renewal;
  server.renewals_wait_at(&renewal);
  h.clock->advance(1010ms);
  ASSERT_TRUE(h.server->await(h.sql().renew, 1)) << "no renewal in flight";
  h.clock->advance(deadline - h.clock->now() - 50ms);
  EXPECT_FALSE(probe.lost) << "lost before its lease ran out";
  h.clock->advance(100ms);
  ASSERT_TRUE(eventually([&] { return probe.lost.load(); })) << "the stalled renewal held the loss back";
  EXPECT_GE(probe.at.load(), deadline);
  EXPECT_LE(probe.at.load(), deadline + 50ms);
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(l.holds());
  EXPECT_EQ(h.server->count(h.sql().renew), 1u) << "the renewal was still in flight";

  server.renewals_wait_at(nullptr);
  renewal.open();  // it answers at last, confirming the row
  ASSERT_TRUE(h.server->await(h.sql().release_delete, 1)) << "the row a lost hold left was not deleted";
  h.clock->advance(100ms);
  EXPECT_FALSE(l.holds()) << "a late confirmation revived the hold";
  EXPECT_THROW(l.release(), sqllock::not_held);
}

// A holder that listens only to on_lost is told before the server can grant the lock to anyone
// else: while its on_lost runs, a late renewal that still finds the row leaves it in place; it is
// deleted as an orphan only once on_lost has returned.
TEST_F(LeaseUnitTest, ALostHoldsRowOutlivesItsOnLostCallbackEvenWhenALateRenewalFindsIt) {
  gate telling;
  std::atomic<bool> told{false};
  table_lock l(h.db, "job", lease(3s, [&] {
                 told = true;
                 telling.wait();
               }));
  const auto start = h.clock->now();
  ASSERT_TRUE(l.try_lock());
  gate renewal;
  server.renewals_wait_at(&renewal);
  h.clock->advance(1010ms);
  ASSERT_TRUE(h.server->await(h.sql().renew, 1)) << "no renewal in flight";
  h.clock->advance(d::lease_deadline(start, 3s) - h.clock->now() + 10ms);
  ASSERT_TRUE(eventually([&] { return told.load(); })) << "on_lost did not run at the deadline";

  server.renewals_wait_at(nullptr);
  renewal.open();  // the stalled renewal answers: the row is still there
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(h.server->count(h.sql().release_delete), 0u) << "the row was deleted while on_lost still ran";
  telling.open();
  EXPECT_TRUE(h.server->await(h.sql().release_delete, 1)) << "the orphan was not deleted after on_lost returned";
  EXPECT_FALSE(l.holds());
}

TEST_F(LeaseUnitTest, ARenewalThatNoLongerFindsTheRowLosesTheHoldAtOnce) {
  auto& l = hold(30s);
  server.renewals_miss_rows(true);  // deleted or taken over behind our back
  h.clock->advance(10100ms, 100ms);
  ASSERT_TRUE(eventually([&] { return probe.lost.load(); }));
  EXPECT_LE(probe.at.load(), acquired + 10100ms) << "lost at the first renewal, not at the 30 s deadline";
  EXPECT_FALSE(l.holds());
}

// The bookkeeping that goes with the GREATEST rule of the renew statement: a renewal's answer
// only judges holds recorded before it was sent, and confirms a lease from when it was sent.
TEST_F(LeaseUnitTest, ARenewalJudgesOnlyHoldsRecordedBeforeItWasSent) {
  auto& l = hold(3s);
  gate renewal;
  server.renewals_wait_at(&renewal);
  h.clock->advance(1010ms);
  ASSERT_TRUE(h.server->await(h.sql().renew, 1));  // in flight
  ASSERT_TRUE(l.try_lock()) << "re-entry while the renewal is in flight";
  server.renewals_miss_rows(true);  // its answer does not list the row
  server.renewals_wait_at(nullptr);
  renewal.open();
  h.clock->advance(100ms);
  EXPECT_FALSE(probe.lost) << "a renewal sent before the re-entry declared the re-entered hold lost";
  EXPECT_TRUE(l.holds());
  l.release();
  l.release();
}

TEST_F(LeaseUnitTest, ALeaseConfirmedByASlowRenewalRunsFromWhenTheRenewalWasSent) {
  hold(3s);
  gate renewal;
  server.renewals_wait_at(&renewal);
  h.clock->advance(1010ms);
  ASSERT_TRUE(h.server->await(h.sql().renew, 1));
  const auto sent = h.clock->now();
  h.clock->advance(1500ms, 1500ms);  // the answer takes 1.5 s
  server.renewals_fail_after(1);     // it confirms the lease; every later renewal fails
  server.renewals_wait_at(nullptr);
  renewal.open();
  const auto deadline = d::lease_deadline(sent, 3s);
  ASSERT_LT(deadline, acquired + 4500ms);
  h.clock->advance(deadline - h.clock->now() - 50ms);
  EXPECT_FALSE(probe.lost) << "lost before the confirmed lease ran out";
  h.clock->advance(100ms);
  ASSERT_TRUE(eventually([&] { return probe.lost.load(); })) << "the lease ran from the answer, not from the send";
  EXPECT_LE(probe.at.load(), deadline + 60ms);
}

TEST_F(LeaseUnitTest, AWaitBacksOffButNeverSleepsPastTheHoldersLeaseOrTheDeadline) {
  server.held_elsewhere("job", 37);
  table_lock l(h.db, "job", lease(3s));
  const auto deadline = h.clock->now() + 200ms;
  EXPECT_FALSE(l.try_lock_until(deadline));
  // The last sleep ends at the deadline (which deadline.hpp's conversion may move by a few ns).
  EXPECT_GE(h.clock->now(), deadline);
  EXPECT_LE(h.clock->now(), deadline + 1ms);
  const auto sleeps = h.clock->sleeps();
  ASSERT_GE(sleeps.size(), 6u);
  EXPECT_GE(sleeps[0], 2500us);
  EXPECT_LE(sleeps[0], 5ms) << "the first delay is 5 ms, with jitter in its upper half";
  EXPECT_GE(sleeps[1], 5ms);
  EXPECT_LE(sleeps[1], 10ms);
  for (const auto s : sleeps) EXPECT_LE(s, 38ms) << "slept past the holder's lease (37 ms + 1)";
}

TEST_F(LeaseUnitTest, AWaitOnAnUnexpiringHolderBacksOffToTheCap) {
  server.held_elsewhere("job", -1);
  table_lock l(h.db, "job", lease(3s));
  const auto deadline = h.clock->now() + 5s;
  EXPECT_FALSE(l.try_lock_until(deadline));
  EXPECT_GE(h.clock->now(), deadline);
  EXPECT_LE(h.clock->now(), deadline + 1ms);
  auto longest = fake_clock::duration::zero();
  for (const auto s : h.clock->sleeps()) longest = std::max(longest, s);
  EXPECT_GE(longest, 250ms) << "never reached the 500 ms cap's range";
  EXPECT_LE(longest, 500ms);
}

// A stop ends a wait mid-sleep, with the fake time standing still: no backoff sleep, lease or
// deadline ends it; nothing but the stop can.
TEST_F(LeaseUnitTest, AStopEndsAWaitMidSleepAndAStopBeforeTheCallLeavesOneAttempt) {
  server.held_elsewhere("job", -1);
  table_lock l(h.db, "job", lease(3s));
  std::stop_source stop;
  auto waiting = std::async(std::launch::async, [&] { return l.try_lock_for(10s, stop.get_token()); });
  ASSERT_TRUE(h.server->await(h.sql().acquire, 1));
  h.clock->advance(100ms);  // the backoff's first sleeps (5 ms, 10 ms, …) pass: it tries again
  ASSERT_TRUE(h.server->await(h.sql().acquire, 2)) << "the wait never retried";
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout) << "ended without the stop";
  const auto fake_before = h.clock->now();
  stop.request_stop();
  ASSERT_EQ(waiting.wait_for(2s), std::future_status::ready) << "the stop did not end the wait";
  EXPECT_FALSE(waiting.get());
  EXPECT_LT(h.clock->now() - fake_before, 600ms) << "it slept on after the stop";
  const auto attempts = h.server->count(h.sql().acquire);
  EXPECT_FALSE(l.lock(stop.get_token()));
  EXPECT_EQ(h.server->count(h.sql().acquire), attempts + 1) << "a stop before the call leaves one attempt";
}

TEST(BackoffUnitTest, DelaysDoubleUpToTheCapWithJitterInTheUpperHalf) {
  bool jittered = false;
  for (int run = 0; run < 20; ++run) {
    d::backoff b(5ms, 500ms);
    auto upper = std::chrono::microseconds(5ms);
    for (int i = 0; i < 12; ++i) {
      const auto delay = b.next();
      EXPECT_GE(delay, upper / 2) << "draw " << i;
      EXPECT_LE(delay, upper) << "draw " << i;
      if (delay != upper) jittered = true;
      upper = std::min<std::chrono::microseconds>(upper * 2, 500ms);
    }
  }
  EXPECT_TRUE(jittered) << "every delay was the upper bound: no jitter";
}

TEST(BackoffUnitTest, AResetStartsAgainFromTheFirstDelay) {
  d::backoff b(5ms, 500ms);
  for (int i = 0; i < 10; ++i) static_cast<void>(b.next());
  EXPECT_GE(b.next(), 250ms) << "not at the cap before the reset";
  b.reset();
  const auto first = b.next();
  EXPECT_GE(first, 2500us);
  EXPECT_LE(first, 5ms) << "the reset did not start again from the first delay";
  const auto second = b.next();
  EXPECT_GE(second, 5ms);
  EXPECT_LE(second, 10ms) << "after a reset the delays double again";
}

}  // namespace
}  // namespace test
