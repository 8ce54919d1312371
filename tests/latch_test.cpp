// sqllock::latch on every driver × dialect pair: arming and explicit re-arming, count-downs to
// open, absent is never open, participant count-downs that count once per generation, timed
// waits, ttl expiry, bad input that changes nothing, the reaper's part, and real processes that
// count down at once (exactly N distinct count-downs open a latch) while waiters in other
// processes wake — by PostgreSQL NOTIFY, and by polling (other dialects, ?prepare=off, PgBouncer).
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <future>
#include <set>
#include <stop_token>
#include <thread>

#include "core/handle/database_impl.hpp"
#include "sqllock/error.hpp"
#include "sqllock/latch.hpp"
#include "sqllock/reaper.hpp"
#include "sqllock/table_lock.hpp"
#include "support/bad_input.hpp"
#include "support/expect_error.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

class LatchTest : public LockTableTest {
 protected:
  std::int64_t count_rows(const database& db, const std::string& suffix, const std::string& where = "") const {
    return std::stoll(sql(db, "SELECT COUNT(*) FROM " + table_ + suffix + (where.empty() ? "" : " WHERE " + where))
                          .rows.at(0)
                          .at(0)
                          .value());
  }
  std::int64_t latch_rows(const database& db, const std::string& where = "") const {
    return count_rows(db, "_latches", where);
  }
  std::int64_t arrival_rows(const database& db, const std::string& where = "") const {
    return count_rows(db, "_latch_arrivals", where);
  }

  // Every row of both latch tables and of the lock table, as text: what a refused call must not
  // change.
  std::vector<std::string> snapshot(const database& db) const {
    std::vector<std::string> out;
    for (const auto& [from, order] : {std::pair<std::string, std::string>{table_ + "_latches", "resource"},
                                      {table_ + "_latch_arrivals", "resource, generation, participant"},
                                      {table_, "resource"}}) {
      for (const auto& r : sql(db, "SELECT * FROM " + from + " ORDER BY " + order).rows) {
        std::string line = from;
        for (const auto& f : r) line.append("|").append(f.value_or("NULL"));
        out.push_back(line);
      }
    }
    return out;
  }

  // Expects count_down (of `l`, by `participant` when given) to throw latch_not_armed saying
  // absent (or open).
  static void expect_not_armed(latch& l, bool absent, std::optional<std::string> participant = std::nullopt) {
    try {
      if (participant)
        (void)l.count_down(*participant);
      else
        (void)l.count_down();
      ADD_FAILURE() << "count_down of '" << l.name() << "' was accepted";
    } catch (const latch_not_armed& e) {
      EXPECT_EQ(e.absent(), absent) << e.what();
      EXPECT_NE(std::string(e.what()).find(absent ? "absent" : "already open"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("nothing was counted"), std::string::npos) << e.what();
    }
  }
};

TEST_P(LatchTest, CreateArmsGenerationOneWithTheCount) {
  auto db = open();
  latch l(db, "load");
  EXPECT_EQ(l.try_create(3), 1);
  const auto s = l.state();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->count, 3);
  EXPECT_EQ(s->initial, 3);
  EXPECT_EQ(s->generation, 1);
  EXPECT_FALSE(s->open);
  EXPECT_EQ(s->opened_at, "");
  EXPECT_EQ(s->armed_at.size(), 24u) << s->armed_at;  // YYYY-MM-DDTHH:MM:SS.mmmZ
  EXPECT_EQ(s->armed_at.back(), 'Z');
  EXPECT_FALSE(s->expires_in) << "no ttl asked for";
  EXPECT_TRUE(s->arrived.empty());
  EXPECT_EQ(latch_rows(db), 1);
}

TEST_P(LatchTest, CreateOfAnArmedLatchIsRefusedAndChangesNothing) {
  auto db = open();
  latch l(db, "load");
  ASSERT_EQ(l.try_create(3), 1);
  ASSERT_TRUE(l.count_down().counted);
  const auto before = snapshot(db);
  EXPECT_EQ(l.try_create(5), std::nullopt) << "re-arming an armed latch must be explicit, never silent";
  EXPECT_EQ(latch(open(), "load").try_create(1, {.ttl = 1h}), std::nullopt) << "from another handle too";
  EXPECT_EQ(snapshot(db), before);
  EXPECT_EQ(l.state()->count, 2);
}

TEST_P(LatchTest, NCountDownsOpenItAndOneMoreIsRefusedAsOpen) {
  auto db = open();
  latch l(db, "three");
  ASSERT_EQ(l.try_create(3), 1);
  EXPECT_EQ(l.wait_for(0s), latch_wait_result::timed_out);
  auto r = l.count_down();
  EXPECT_TRUE(r.counted);
  EXPECT_EQ(r.remaining, 2);
  EXPECT_FALSE(r.open());
  EXPECT_EQ(latch(open(), "three").count_down().remaining, 1) << "any handle counts the same latch";
  EXPECT_FALSE(l.state()->open);
  r = l.count_down();
  EXPECT_TRUE(r.counted);
  EXPECT_EQ(r.remaining, 0);
  EXPECT_TRUE(r.open());
  EXPECT_EQ(l.wait(), latch_wait_result::open);
  EXPECT_EQ(l.wait_for(0s), latch_wait_result::open);
  const auto s = l.state();
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->open);
  EXPECT_EQ(s->count, 0);
  EXPECT_EQ(s->initial, 3);
  EXPECT_EQ(s->opened_at.size(), 24u) << s->opened_at;
  EXPECT_GE(s->opened_at, s->armed_at);
  const auto before = snapshot(db);
  expect_not_armed(l, false);
  expect_not_armed(l, false, "late");
  EXPECT_EQ(snapshot(db), before) << "a count-down too many changes nothing";
}

TEST_P(LatchTest, AnOpenLatchIsReArmedAsItsNextGeneration) {
  auto db = open();
  latch l(db, "daily");
  ASSERT_EQ(l.try_create(1), 1);
  ASSERT_TRUE(l.count_down().open());
  EXPECT_EQ(l.try_create(2, {.ttl = 1h}), 2);
  auto s = l.state();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->generation, 2);
  EXPECT_EQ(s->count, 2);
  EXPECT_EQ(s->initial, 2);
  EXPECT_FALSE(s->open);
  EXPECT_EQ(s->opened_at, "");
  ASSERT_TRUE(s->expires_in);
  EXPECT_GT(*s->expires_in, 59min);
  EXPECT_LE(*s->expires_in, 1h);
  EXPECT_EQ(l.wait_for(0s), latch_wait_result::timed_out) << "the new generation is armed";
  EXPECT_EQ(l.try_create(7), std::nullopt);
  ASSERT_TRUE(l.count_down().counted);
  ASSERT_TRUE(l.count_down().open());
  EXPECT_EQ(l.try_create(1), 3);
  EXPECT_EQ(latch_rows(db), 1);
}

TEST_P(LatchTest, AMissingLatchIsAbsentNeverOpen) {
  auto db = open();
  latch l(db, "never-created");
  EXPECT_EQ(l.wait(), latch_wait_result::absent);
  EXPECT_EQ(l.wait_for(10s), latch_wait_result::absent);
  EXPECT_EQ(l.wait_until(std::chrono::system_clock::now() + 10s), latch_wait_result::absent);
  EXPECT_EQ(l.state(), std::nullopt);
  expect_not_armed(l, true);
  expect_not_armed(l, true, "p");
  EXPECT_EQ(latch_rows(db), 0) << "a count-down never creates a latch";
  EXPECT_EQ(arrival_rows(db), 0);
  ASSERT_EQ(latch(db, "Never-created").try_create(1), 1);
  EXPECT_EQ(l.wait_for(0s), latch_wait_result::absent) << "names are compared byte for byte";
}

TEST_P(LatchTest, CountDownWithTheSameParticipantTwiceCountsOnce) {
  auto db = open();
  latch l(db, "two-loaders");
  ASSERT_EQ(l.try_create(2), 1);
  auto r = l.count_down("loader-a");
  EXPECT_TRUE(r.counted);
  EXPECT_EQ(r.remaining, 1);
  r = l.count_down("loader-a");
  EXPECT_FALSE(r.counted) << "a retry of the same participant";
  EXPECT_EQ(r.remaining, 1);
  r = latch(open(), "two-loaders").count_down("loader-a");
  EXPECT_FALSE(r.counted) << "also from another handle or process";
  EXPECT_EQ(l.state()->arrived, std::vector<std::string>{"loader-a"});
  r = l.count_down("loader-b");
  EXPECT_TRUE(r.counted);
  EXPECT_TRUE(r.open());
  // Retries after the latch opened (e.g. of the count-down that opened it) are not errors...
  r = l.count_down("loader-b");
  EXPECT_FALSE(r.counted);
  EXPECT_EQ(r.remaining, 0);
  EXPECT_FALSE(l.count_down("loader-a").counted);
  // ...but a participant that never arrived is one too many.
  expect_not_armed(l, false, "loader-c");
  EXPECT_EQ(l.state()->arrived, (std::vector<std::string>{"loader-a", "loader-b"}));
  EXPECT_EQ(arrival_rows(db), 2);
}

TEST_P(LatchTest, ParticipantsCountAgainInTheNextGeneration) {
  auto db = open();
  latch l(db, "round");
  ASSERT_EQ(l.try_create(2), 1);
  ASSERT_TRUE(l.count_down("a").counted);
  ASSERT_TRUE(l.count_down("b").open());
  ASSERT_EQ(l.try_create(2), 2);
  EXPECT_TRUE(l.state()->arrived.empty()) << "arrivals belong to a generation";
  auto r = l.count_down("a");
  EXPECT_TRUE(r.counted);
  EXPECT_EQ(r.remaining, 1);
  EXPECT_FALSE(l.count_down("a").counted);
  EXPECT_EQ(l.state()->arrived, std::vector<std::string>{"a"});
}

TEST_P(LatchTest, PlainAndParticipantCountDownsShareTheCount) {
  auto db = open();
  latch l(db, "mixed");
  ASSERT_EQ(l.try_create(4), 1);
  EXPECT_EQ(l.count_down().remaining, 3);
  EXPECT_EQ(l.count_down("p").remaining, 2);
  EXPECT_FALSE(l.count_down("p").counted);
  EXPECT_EQ(l.count_down().remaining, 1) << "plain count-downs count every call";
  EXPECT_TRUE(l.count_down("q").open());
  const auto s = l.state();
  EXPECT_EQ(s->arrived, (std::vector<std::string>{"p", "q"})) << "plain count-downs leave no name";
}

TEST_P(LatchTest, TimedWaitsTimeOutWhileArmedAndTakeAnyDurationOrClock) {
  auto db = open();
  latch l(db, "timed");
  ASSERT_EQ(l.try_create(1), 1);
  EXPECT_EQ(l.wait_for(50ms), latch_wait_result::timed_out);
  EXPECT_EQ(l.wait_for(-1h), latch_wait_result::timed_out) << "a deadline already passed checks once";
  EXPECT_EQ(l.wait_for(std::chrono::hours::min()), latch_wait_result::timed_out) << "saturates, no overflow";
  EXPECT_EQ(l.wait_until(std::chrono::system_clock::now() + 30ms), latch_wait_result::timed_out);
  EXPECT_EQ(l.wait_until(std::chrono::steady_clock::time_point::min()), latch_wait_result::timed_out);
  ASSERT_TRUE(l.count_down().open());
  EXPECT_EQ(l.wait_for(std::chrono::hours::max()), latch_wait_result::open) << "saturates, no overflow";
  EXPECT_EQ(l.wait_for(std::chrono::duration<double>(0.5)), latch_wait_result::open);
  EXPECT_EQ(l.wait_until(std::chrono::system_clock::time_point::max()), latch_wait_result::open);
}

TEST_P(LatchTest, AWaiterWakesWhenTheLastCountDownArrives) {
  auto db = open();
  latch l(db, "gate");
  ASSERT_EQ(l.try_create(2), 1);
  auto waiter = std::async(std::launch::async, [l]() mutable { return l.wait_for(60s); });
  auto quick = std::async(std::launch::async, [l]() mutable { return l.wait_for(20ms); });
  EXPECT_EQ(quick.get(), latch_wait_result::timed_out);
  ASSERT_TRUE(latch(open(), "gate").count_down().counted);
  EXPECT_EQ(waiter.wait_for(100ms), std::future_status::timeout) << "one count-down of two does not open it";
  ASSERT_TRUE(latch(open(), "gate").count_down("last").open());
  EXPECT_EQ(waiter.get(), latch_wait_result::open);
}

TEST_P(LatchTest, AStopEndsAWaitAsATimeoutAndAStopBeforeTheCallChecksOnce) {
  auto db = open();
  latch l(db, "stopped");
  ASSERT_EQ(l.try_create(1), 1);
  std::stop_source stop;
  auto waiter = std::async(std::launch::async, [l, token = stop.get_token()]() mutable { return l.wait(token); });
  auto timed = std::async(std::launch::async,
                          [l, token = stop.get_token()]() mutable { return l.wait_for(60s, token); });
  EXPECT_EQ(waiter.wait_for(200ms), std::future_status::timeout) << "ended while armed, before the stop";
  const auto start = std::chrono::steady_clock::now();
  stop.request_stop();
  EXPECT_EQ(waiter.get(), latch_wait_result::timed_out);
  EXPECT_EQ(timed.get(), latch_wait_result::timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, scaled(1s)) << "the stop did not end the waits promptly";
  EXPECT_EQ(l.wait(stop.get_token()), latch_wait_result::timed_out) << "armed: the one check finds it armed";
  ASSERT_TRUE(l.count_down().open());
  EXPECT_EQ(l.wait(stop.get_token()), latch_wait_result::open) << "a stop before the call still checks once";
}

TEST_P(LatchTest, AWaiterOfAGenerationThatOpenedSeesItOpenEvenWhenReArmedAtOnce) {
  auto db = open();
  latch l(db, "relay");
  std::int64_t generation = 0;
  for (int round = 0; round < 5; ++round) {
    ASSERT_EQ(l.try_create(1), ++generation);
    auto waiter = std::async(std::launch::async, [l]() mutable { return l.wait_for(scaled(10s)); });
    // The generation a waiter waits for is the one its first look finds, so that look must come
    // before the re-arm; nothing shows when it happened, hence the pause (20 ms was too short
    // for a new SQLite connection under the sanitizers with four tests at once).
    std::this_thread::sleep_for(scaled(200ms));
    ASSERT_TRUE(l.count_down().open());
    ASSERT_EQ(l.try_create(1), ++generation) << "re-armed at once";
    EXPECT_EQ(waiter.get(), latch_wait_result::open) << "round " << round;
    ASSERT_TRUE(l.count_down().open());
  }
}

TEST_P(LatchTest, ALatchPastItsTtlIsAbsentAndIsCreatedAnew) {
  auto db = open();
  latch l(db, "abandoned");
  ASSERT_EQ(l.try_create(3, {.ttl = 200ms}), 1);
  ASSERT_TRUE(l.count_down("early").counted);
  const auto s = l.state();
  ASSERT_TRUE(s && s->expires_in);
  EXPECT_LE(*s->expires_in, 200ms);
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(l.state(), std::nullopt);
  EXPECT_EQ(l.wait(), latch_wait_result::absent);
  EXPECT_EQ(l.wait_for(1s), latch_wait_result::absent);
  const auto before = snapshot(db);
  expect_not_armed(l, true);
  expect_not_armed(l, true, "late");
  expect_not_armed(l, true, "early");
  EXPECT_EQ(snapshot(db), before);
  // Arming replaces it: a new latch, whose generation still moves on so that the arrivals of the
  // abandoned one never count for it.
  EXPECT_EQ(l.try_create(1), 2);
  EXPECT_TRUE(l.state()->arrived.empty());
  EXPECT_TRUE(l.count_down("early").open());
}

TEST_P(LatchTest, AWaiterSeesAbsentWhenTheTtlRunsOutWhileItWaits) {
  auto db = open();
  latch l(db, "deadline");
  ASSERT_EQ(l.try_create(1, {.ttl = 300ms}), 1);
  EXPECT_EQ(l.wait_for(60s), latch_wait_result::absent);
}

TEST_P(LatchTest, AWaiterSeesAbsentWhenItsLatchIsDeletedOrReplacedWhileItWaits) {
  auto db = open();
  latch l(db, "deleted");
  ASSERT_EQ(l.try_create(2), 1);
  auto waiter = std::async(std::launch::async, [l]() mutable { return l.wait_for(60s); });
  std::this_thread::sleep_for(50ms);
  sql(db, "DELETE FROM " + table_ + "_latches WHERE resource = 'deleted'");
  EXPECT_EQ(waiter.get(), latch_wait_result::absent);

  // A new latch under the name is not the one waited for, even at the same generation, and even
  // when it opens.
  ASSERT_EQ(l.try_create(1), 1);
  waiter = std::async(std::launch::async, [l]() mutable { return l.wait_for(60s); });
  std::this_thread::sleep_for(50ms);
  sql(db, "DELETE FROM " + table_ + "_latches WHERE resource = 'deleted'");
  ASSERT_EQ(l.try_create(1), 1);
  ASSERT_TRUE(l.count_down().open());
  EXPECT_EQ(waiter.get(), latch_wait_result::absent);
}

TEST_P(LatchTest, BadInputIsRefusedAndChangesNothing) {
  auto db = open();
  latch l(db, "target");
  ASSERT_EQ(l.try_create(2), 1);
  ASSERT_TRUE(l.count_down("first").counted);
  const auto before = snapshot(db);
  for (const auto& bad : bad_lock_names()) {
    expect_error<invalid_argument>([&] { latch(db, bad.bytes); }, {"latch name", bad.says}, "latch " + bad.label);
    expect_error<invalid_argument>([&] { (void)l.count_down(bad.bytes); }, {"participant id", bad.says},
                                   "participant " + bad.label);
  }
  for (const std::int64_t count :
       {std::int64_t{0}, std::int64_t{-1}, max_latch_count + 1, std::int64_t{INT64_MIN}, std::int64_t{INT64_MAX}})
    expect_error<invalid_argument>([&] { (void)latch(db, "new").try_create(count); },
                                   {"count must be between 1 and 1000000"}, "count " + std::to_string(count));
  for (const auto ttl :
       {0ms, -1ms, std::chrono::milliseconds(std::chrono::hours(24 * 366)), std::chrono::milliseconds::min()})
    expect_error<invalid_argument>([&] { (void)latch(db, "new").try_create(1, {.ttl = ttl}); },
                                   {"ttl must be between 1 ms and 365 days"}, "ttl " + std::to_string(ttl.count()));
  latch absent(db, "absent");
  expect_not_armed(absent, true);
  expect_not_armed(absent, true, "first");
  EXPECT_EQ(snapshot(db), before) << "nothing changed";
  EXPECT_EQ(latch(db, "new").state(), std::nullopt);
}

TEST_P(LatchTest, NamesAndParticipantsAreBytesUpToTheLimit) {
  auto db = open();
  for (const auto& [a, b] : distinct_name_pairs()) {
    ASSERT_EQ(latch(db, a).try_create(1), 1) << a;
    ASSERT_EQ(latch(db, b).try_create(2), 1) << b << " is another latch than " << a;
    EXPECT_TRUE(latch(db, a).count_down(b).open());
    EXPECT_EQ(latch(db, b).count_down(a).remaining, 1);
    EXPECT_EQ(latch(db, b).count_down(b).remaining, 0) << "participant ids are bytes too";
  }
  for (const auto& name : at_limit_names()) {
    latch l(db, name);
    ASSERT_EQ(l.try_create(1), 1);
    EXPECT_TRUE(l.count_down(name).open());
    EXPECT_EQ(l.state()->arrived, std::vector<std::string>{name});
  }
  for (const auto& name : metacharacter_names()) {
    latch l(db, name);
    ASSERT_TRUE(l.try_create(1)) << name;  // some were used above: then re-armed
    EXPECT_TRUE(l.count_down(name).open());
    EXPECT_EQ(l.wait(), latch_wait_result::open);
  }
}

TEST_P(LatchTest, LatchesAndLocksOfOneNameAreIndependent) {
  auto db = open();
  table_lock lock(db, "shared-name");
  ASSERT_TRUE(lock.try_lock());
  latch l(db, "shared-name");
  ASSERT_EQ(l.try_create(1), 1);
  EXPECT_TRUE(l.count_down().open());
  EXPECT_TRUE(lock.holds());
  EXPECT_EQ(rows(db), 1);
}

TEST_P(LatchTest, TheLeastPrivilegeRoleRunsEveryLatchOperationAndTheReaper) {
  if (GetParam().dialect != dialect_kind::sqlite && !GetParam().least_privilege() && servers_required())
    FAIL() << "the suites connect as a least-privilege role (see test_env.hpp)";
  auto db = open();  // the runtime role: SELECT, INSERT, UPDATE, DELETE only
  latch l(db, "privileged");
  ASSERT_EQ(l.try_create(2, {.ttl = 1h}), 1);
  ASSERT_TRUE(l.count_down().counted);
  ASSERT_TRUE(l.count_down("p").open());
  EXPECT_EQ(l.wait(), latch_wait_result::open);
  EXPECT_EQ(l.try_create(1), 2);
  EXPECT_TRUE(l.state());
  ASSERT_TRUE(l.count_down().open());
  EXPECT_EQ(reap(db, {.latch_retention = 0ms}), 1u);
  EXPECT_EQ(latch_rows(db), 0);
  EXPECT_EQ(arrival_rows(db), 0);
}

// ---- the reaper's part

TEST_P(LatchTest, TheReaperDeletesOpenLatchesAfterTheirRetentionAndExpiredOnesWithTheirArrivals) {
  auto db = open();
  ASSERT_EQ(latch(db, "opened").try_create(2), 1);
  ASSERT_TRUE(latch(db, "opened").count_down("a").counted);
  ASSERT_TRUE(latch(db, "opened").count_down("b").open());
  ASSERT_EQ(latch(db, "armed").try_create(2), 1);
  ASSERT_TRUE(latch(db, "armed").count_down("a").counted);
  ASSERT_EQ(latch(db, "expired").try_create(2, {.ttl = 1ms}), 1);
  ASSERT_EQ(latch(db, "armed-with-ttl").try_create(2, {.ttl = 1h}), 1);
  std::this_thread::sleep_for(50ms);
  ASSERT_EQ(latch_rows(db), 4);
  EXPECT_EQ(arrival_rows(db), 3);

  EXPECT_EQ(reap(db), 1u) << "by default an open latch stays a day; the expired one goes";
  EXPECT_EQ(latch_rows(db, "resource = 'expired'"), 0);
  EXPECT_EQ(latch(db, "opened").wait_for(0s), latch_wait_result::open);
  EXPECT_EQ(reap(db, {.latch_retention = 1h}), 0u);
  EXPECT_EQ(reap(db, {.latch_retention = 0ms}), 1u);
  EXPECT_EQ(latch(db, "opened").wait_for(0s), latch_wait_result::absent) << "reaped: absent, never open";
  EXPECT_EQ(latch_rows(db), 2) << "armed latches stay, whatever their age, until their ttl";
  EXPECT_EQ(arrival_rows(db), 1) << "the arrivals went with their latch";
  EXPECT_EQ(latch(db, "armed").state()->arrived, std::vector<std::string>{"a"});
  // A latch created again under a reaped name starts afresh.
  ASSERT_EQ(latch(db, "opened").try_create(1), 1);
  EXPECT_TRUE(latch(db, "opened").count_down("a").counted);
}

TEST_P(LatchTest, TheReaperGraceDelaysExpiredLatchesAndArrivalsOfOldGenerationsGo) {
  auto db = open();
  latch l(db, "rounds");
  ASSERT_EQ(l.try_create(2), 1);
  ASSERT_TRUE(l.count_down("a").counted);
  ASSERT_TRUE(l.count_down("b").open());
  ASSERT_EQ(l.try_create(2, {.ttl = 200ms}), 2);
  ASSERT_TRUE(l.count_down("a").counted);
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(arrival_rows(db), 3);
  EXPECT_EQ(reap(db, {.grace = 1h}), 0u) << "its ttl ran out less than the grace ago";
  EXPECT_EQ(latch_rows(db), 1);
  EXPECT_EQ(arrival_rows(db), 1) << "generation 1's arrivals are swept; generation 2's stay with it";
  EXPECT_EQ(reap(db), 1u);
  EXPECT_EQ(latch_rows(db), 0);
  EXPECT_EQ(arrival_rows(db), 0);
}

TEST_P(LatchTest, TheReaperReportsLatchBatchesAndRefusesABadRetention) {
  auto db = open();
  for (int i = 0; i < 5; ++i) {
    latch l(db, "batch-" + std::to_string(i));
    ASSERT_EQ(l.try_create(1), 1);
    ASSERT_TRUE(l.count_down().open());
  }
  std::vector<std::uint64_t> batches;
  EXPECT_EQ(
      reap(db, {.batch_size = 2, .on_batch = [&](std::uint64_t n) { batches.push_back(n); }, .latch_retention = 0ms}),
      5u);
  std::erase(batches, 0u);  // the lock rows' pass found nothing
  EXPECT_EQ(batches, (std::vector<std::uint64_t>{2, 2, 1})) << "each latch batch, as it committed";
  EXPECT_THROW(reap(db, {.latch_retention = -1ms}), invalid_argument);
  EXPECT_THROW(reap(db, {.latch_retention = std::chrono::hours(24 * 366)}), invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, LatchTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

// ---- real processes

// Every pair, plus PostgreSQL without notifications (?prepare=off makes waiters poll) on both
// drivers, and through PgBouncer: the NOTIFY path and the polling path.
std::vector<target> process_targets() {
  auto out = all_targets();
  for (const auto& t : all_targets()) {
    if (t.dialect != dialect_kind::postgresql) continue;
    auto polling = t;
    polling.name += "_polling";
    polling.uri = with_query(t.uri, "prepare=off");
    polling.owner_uri = with_query(t.owner_uri, "prepare=off");
    out.push_back(polling);
  }
  for (const auto& t : pgbouncer_targets()) out.push_back(t);
  return out;
}

class LatchProcessTest : public LatchTest {
 protected:
  // Runs `body` in `n` processes at once; each writes one byte to the pipe. Returns the bytes.
  std::string in_processes(int n, const std::function<char(int)>& body, int waiters = 0,
                           const std::function<char()>& wait_body = {}) {
    int pipe_fds[2];
    EXPECT_EQ(::pipe(pipe_fds), 0);
    process_group group;
    const auto report = [&](char c) { return ::write(pipe_fds[1], &c, 1) == 1 ? 0 : 1; };
    for (int i = 0; i < waiters; ++i) group.spawn([&] { return report(wait_body()); });
    for (int i = 0; i < n; ++i) group.spawn([&, i] { return report(body(i)); });
    EXPECT_EQ(group.wait_all(), n + waiters);
    ::close(pipe_fds[1]);
    std::string out;
    char c;
    while (::read(pipe_fds[0], &c, 1) == 1) out += c;
    ::close(pipe_fds[0]);
    std::sort(out.begin(), out.end());
    return out;
  }
};

// 2N processes with distinct participants race for a latch of N: exactly N count, the others
// find it open; waiters in other processes all see it open, and only then.
TEST_P(LatchProcessTest, ExactlyNDistinctCountDownsOpenItAndWaitersInOtherProcessesWake) {
  constexpr int kCount = 6, kWaiters = 3;
  {
    auto db = open();
    ASSERT_EQ(latch(db, "race").try_create(kCount), 1);
  }
  const auto result = in_processes(
      2 * kCount,
      [&](int i) {
        latch l(open(), "race");
        try {
          return l.count_down("worker-" + std::to_string(i)).counted ? 'C' : '?';
        } catch (const latch_not_armed& e) {
          return e.absent() ? 'A' : 'O';
        }
      },
      kWaiters,
      [&] {
        latch l(open(), "race");
        if (l.wait_for(120s) != latch_wait_result::open) return 'T';
        const auto s = l.state();  // open means N distinct arrivals, never fewer
        return s && s->arrived.size() == static_cast<std::size_t>(kCount) ? 'W' : 'E';
      });
  EXPECT_EQ(result, std::string(kCount, 'C') + std::string(kCount, 'O') + std::string(kWaiters, 'W'));
  auto db = open();
  EXPECT_EQ(arrival_rows(db), kCount);
  EXPECT_EQ(latch(db, "race").state()->count, 0);
}

// Each participant counts down from two processes at once (a retry racing the original): each
// counts once, so a latch of N opens after N participants, not N/2.
TEST_P(LatchProcessTest, ConcurrentRetriesOfOneParticipantCountOnce) {
  constexpr int kParticipants = 5;
  {
    auto db = open();
    ASSERT_EQ(latch(db, "retries").try_create(kParticipants + 1), 1);
  }
  const auto result = in_processes(2 * kParticipants, [&](int i) {
    return latch(open(), "retries").count_down("p-" + std::to_string(i % kParticipants)).counted ? 'C' : 'R';
  });
  EXPECT_EQ(result, std::string(kParticipants, 'C') + std::string(kParticipants, 'R'));
  auto db = open();
  latch l(db, "retries");
  EXPECT_EQ(l.state()->count, 1) << "one participant still missing";
  EXPECT_EQ(l.wait_for(0s), latch_wait_result::timed_out);
  EXPECT_TRUE(l.count_down("p-last").open());
}

// Plain count-downs: 2N processes, each once: exactly N count, and N find it open.
TEST_P(LatchProcessTest, PlainCountDownsFromManyProcessesCountExactlyToZero) {
  constexpr int kCount = 6;
  {
    auto db = open();
    ASSERT_EQ(latch(db, "plain").try_create(kCount), 1);
  }
  const auto result = in_processes(2 * kCount, [&](int) {
    try {
      return latch(open(), "plain").count_down().counted ? 'C' : '?';
    } catch (const latch_not_armed& e) {
      return e.absent() ? 'A' : 'O';
    }
  });
  EXPECT_EQ(result, std::string(kCount, 'C') + std::string(kCount, 'O'));
}

// A waiter process blocks while the latch is armed and returns open when another process counts
// it to zero — whether its wake-up comes by NOTIFY or by polling.
TEST_P(LatchProcessTest, AWaiterProcessWakesOnTheCountDownOfAnotherProcess) {
  {
    auto db = open();
    ASSERT_EQ(latch(db, "handoff").try_create(1), 1);
  }
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  process_group group;
  group.spawn([&] {
    const char c = latch(open(), "handoff").wait_for(120s) == latch_wait_result::open ? 'W' : 'T';
    return ::write(pipe_fds[1], &c, 1) == 1 ? 0 : 1;
  });
  group.start();
  // The waiter is waiting (or about to): it must not have returned while the latch is armed.
  std::this_thread::sleep_for(300ms);
  ::close(pipe_fds[1]);
  pollfd none{pipe_fds[0], POLLIN, 0};
  EXPECT_EQ(::poll(&none, 1, 0), 0) << "the waiter returned before the latch opened";
  ASSERT_TRUE(latch(open(), "handoff").count_down().open());
  EXPECT_EQ(group.wait_all(), 1);
  char c = 0;
  EXPECT_EQ(::read(pipe_fds[0], &c, 1), 1);
  EXPECT_EQ(c, 'W');
  ::close(pipe_fds[0]);
}

INSTANTIATE_TEST_SUITE_P(Targets, LatchProcessTest, ::testing::ValuesIn(process_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
