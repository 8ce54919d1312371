// The reaper (sqllock::reap) on every driver × dialect pair: it deletes exactly the expired rows,
// in batches, from any number of processes at once, never a renewed lease, never waiting for a
// row another transaction holds, and never touching the fencing-token source.
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/admin/admin_store.hpp"
#include "core/handle/database_impl.hpp"
#include "core/lease/table_store.hpp"
#include "sqllock/error.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/reaper.hpp"
#include "sqllock/rw_lock.hpp"
#include "sqllock/status.hpp"
#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/lock_rows.hpp"
#include "support/processes.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

class ReaperTest : public LockTableTest {};

TEST_P(ReaperTest, OnePassDeletesTenThousandExpiredRowsAndLeavesTheLiveOnes) {
  auto db = open();
  insert_rows(db, {.prefix = "dead-", .count = 10000, .expires_in = -60s});
  insert_rows(db, {.prefix = "live-", .count = 5, .expires_in = 1h});
  table_lock held(db, "held-by-a-handle");
  ASSERT_TRUE(held.try_lock());
  ASSERT_EQ(rows(db), 10006);
  const auto fence_before = fence_source_value(db);

  const auto started = steady::now();
  EXPECT_EQ(reap(db), 10000u);
  const auto took = steady::now() - started;
  EXPECT_LT(took, 60s);
  std::cout << "[          ] " << GetParam().name << ": reaped 10,000 rows in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";

  EXPECT_EQ(rows(db), 6);
  EXPECT_EQ(rows(db, "resource LIKE 'live-%'"), 5);
  EXPECT_TRUE(held.holds());
  EXPECT_EQ(fence_source_value(db), fence_before) << "the fencing-token source must not be touched";

  // A reaped name gets a token above every earlier one.
  table_lock again(db, "dead-17");
  ASSERT_TRUE(again.try_lock());
  EXPECT_GT(again.fence(), fence_before);
  EXPECT_EQ(reap(db), 0u);
}

TEST_P(ReaperTest, SmallBatchesStillFinishThePassAndGraceSparesRecentlyExpiredRows) {
  auto db = open();
  insert_rows(db, {.prefix = "old-", .count = 250, .expires_in = -1h});
  insert_rows(db, {.prefix = "recent-", .count = 20, .expires_in = -2s});
  EXPECT_EQ(reap(db, {.batch_size = 7, .grace = 10min}), 250u);
  EXPECT_EQ(rows(db), 20);
  EXPECT_EQ(reap(db, {.batch_size = 7, .grace = 1s}), 20u);
  EXPECT_EQ(rows(db), 0);
}

TEST_P(ReaperTest, OneBatchDeletesAtMostTheBatchSize) {
  // reap() loops over batches until one comes back short; each batch itself must stay bounded.
  auto db = open();
  insert_rows(db, {.count = 30, .expires_in = -60s});
  auto& impl = detail::database_access::impl(db);
  const auto admin = detail::make_admin_sql(impl.dialect(), db.table());
  auto conn = impl.borrow();
  std::string resume;
  const auto batch = detail::admin_store(*conn, *admin).reap_batch(7, 0ms, resume);
  EXPECT_EQ(batch.candidates, 7u);
  EXPECT_EQ(batch.deleted, 7u);
  EXPECT_EQ(rows(db), 23);
}

// on_batch hears of every committed batch, so a caller counting there knows what a pass did even
// when it ends part-way (here: by the callback's own exception, after the second batch).
TEST_P(ReaperTest, OnBatchReportsEachCommittedBatchAndWhatAFailedPassDeleted) {
  auto db = open();
  insert_rows(db, {.prefix = "old-", .count = 250, .expires_in = -1h});
  insert_rows(db, {.prefix = "live-", .count = 3, .expires_in = 1h});
  std::vector<std::uint64_t> batches;
  EXPECT_EQ(reap(db, {.batch_size = 100, .on_batch = [&](std::uint64_t n) { batches.push_back(n); }}), 250u);
  EXPECT_EQ(batches, (std::vector<std::uint64_t>{100, 100, 50}));

  insert_rows(db, {.prefix = "again-", .count = 250, .expires_in = -1h});
  std::uint64_t reported = 0;
  int calls = 0;
  const auto failing = [&](std::uint64_t n) {
    reported += n;
    if (++calls == 2) throw std::runtime_error("stop counting");
  };
  EXPECT_THROW(reap(db, {.batch_size = 100, .on_batch = failing}), std::runtime_error);
  EXPECT_EQ(reported, 200u);
  EXPECT_EQ(rows(db, "resource LIKE 'again-%'"), 50) << "the two reported batches stay deleted";
  EXPECT_EQ(rows(db, "resource LIKE 'live-%'"), 3);
}

TEST_P(ReaperTest, RejectsOutOfRangeOptionsWithoutTouchingTheTable) {
  auto db = open();
  insert_rows(db, {.count = 3});
  EXPECT_THROW(reap(db, {.batch_size = 0}), invalid_argument);
  EXPECT_THROW(reap(db, {.batch_size = max_reap_batch + 1}), invalid_argument);
  EXPECT_THROW(reap(db, {.grace = -1ms}), invalid_argument);
  EXPECT_EQ(rows(db), 3);
}

TEST_P(ReaperTest, AStopRequestEndsThePassBetweenBatches) {
  auto db = open();
  insert_rows(db, {.count = 30});
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(reap(db, {.batch_size = 10, .stop = stop.get_token()}), 0u);
  EXPECT_EQ(rows(db), 30);
}

TEST_P(ReaperTest, AMissingLockTableIsASchemaError) {
  database_options o;
  o.table = unique_name("nope");
  database db(GetParam().uri, o);
  EXPECT_THROW(reap(db), schema_error);
}

TEST_P(ReaperTest, ReapersInParallelProcessesDeleteEachExpiredRowOnce) {
  constexpr int kReapers = 3;
  constexpr std::int64_t kExpired = 6000;
  {
    auto db = open();
    insert_rows(db, {.prefix = "dead-", .count = kExpired, .expires_in = -60s});
    insert_rows(db, {.prefix = "live-", .count = 50, .expires_in = 1h});
  }
  int counts[2];
  ASSERT_EQ(::pipe(counts), 0);
  process_group group;
  for (int i = 0; i < kReapers; ++i) {
    group.spawn([&] {
      auto db = open();
      // Small batches so that the reapers interleave many times.
      const std::uint64_t n = reap(db, {.batch_size = 50});
      return ::write(counts[1], &n, sizeof n) == sizeof n ? 0 : 1;
    });
  }
  EXPECT_EQ(group.wait_all(), kReapers);
  ::close(counts[1]);
  std::uint64_t sum = 0, n = 0;
  int reports = 0;
  while (::read(counts[0], &n, sizeof n) == sizeof n) {
    sum += n;
    ++reports;
  }
  ::close(counts[0]);
  EXPECT_EQ(reports, kReapers);
  EXPECT_EQ(sum, static_cast<std::uint64_t>(kExpired)) << "each expired row is deleted by exactly one reaper";
  auto db = open();
  EXPECT_EQ(rows(db), 50);
  EXPECT_EQ(rows(db, "resource LIKE 'live-%'"), 50);
}

// A renewal and a reaper run at the same moment, around the instant the lease expires. Each
// round has one of two clean outcomes: the renewal reports the lease held and the row survives,
// or the renewal reports it gone. A row that the renewal confirmed is never deleted.
TEST_P(ReaperTest, ARenewalRacingTheReaperAtExpiryWinsOrLosesCleanly) {
  // At least kRounds rounds, and more (up to kMaxRounds) until both outcomes were seen: on a slow
  // machine the statements land later against the expiry, and one outcome can be rare.
  constexpr int kRounds = 150, kMaxRounds = 1000;
  auto db = open();
  auto& impl = detail::database_access::impl(db);
  std::mt19937 rng(std::random_device{}());
  // Leases end between 8 ms before and 20 ms after both statements are sent.
  std::uniform_int_distribution<int> offset_ms(-8, 20);
  int renewed = 0, lost = 0;
  for (int round = 0; round < kMaxRounds && (round < kRounds || renewed == 0 || lost == 0); ++round) {
    const std::string session = "race-" + std::to_string(round);
    const std::string resource = "race-" + std::to_string(round) + "-1";
    // The row expires 30 ms + offset after the insert runs; the race starts 30 ms after the
    // insert was sent. Lease 1 h: a renewal pushes expiry far beyond the reaper's reach.
    const auto inserting = steady::now();
    insert_rows(db, {.prefix = "race-" + std::to_string(round) + "-",
                     .count = 1,
                     .expires_in = std::chrono::milliseconds(offset_ms(rng) + 30),
                     .session = session,
                     .lease = 1h});
    std::this_thread::sleep_until(inserting + 30ms);
    std::barrier go(2);
    std::vector<detail::held_lease> kept;
    std::exception_ptr renew_error;
    std::thread renewer([&] {
      try {
        auto conn = impl.borrow();
        go.arrive_and_wait();
        kept = detail::table_store(*conn, impl.sql()).renew(session);
      } catch (...) {
        renew_error = std::current_exception();
      }
    });
    {
      auto conn = impl.borrow();  // connect before the barrier, like the renewer
      (void)conn;
    }
    go.arrive_and_wait();
    reap(db, {.batch_size = 10});
    renewer.join();
    if (renew_error) std::rethrow_exception(renew_error);

    const bool confirmed = !kept.empty();
    const bool exists = column(db, resource, "resource").has_value();
    if (confirmed) {
      ASSERT_TRUE(exists) << "round " << round << ": the reaper deleted a lease the renewal confirmed";
      ++renewed;
    } else {
      ++lost;
    }
    sql(db, "DELETE FROM " + table_ + " WHERE holder_session = $1", {session});
  }
  std::cout << "[          ] " << GetParam().name << ": " << renewed << " renewals won, " << lost
            << " found the lease gone\n";
  EXPECT_GT(renewed, 0);
  EXPECT_GT(lost, 0);
}

// The wait queue: places of crashed holders and waiters, expired, in the queues of names that
// still have live holders and waiters (both kinds), and on names nobody uses any more.
TEST_P(ReaperTest, DeletesOnlyExpiredQueueEntriesAndLeavesLiveHoldersAndWaiters) {
  auto db = open();
  // Live: a writer holding "q-1", a writer waiting behind it, and two readers holding "r-1".
  auto holder_db = open();
  fair_lock holder(holder_db, "q-1");
  ASSERT_TRUE(holder.try_lock());
  rw_lock reader(holder_db, "r-1");
  ASSERT_TRUE(reader.try_lock_shared());
  rw_lock other_reader(open(), "r-1");
  ASSERT_TRUE(other_reader.try_lock_shared());
  auto waiter_db = open();
  fair_lock waiter(waiter_db, "q-1");
  std::atomic<bool> waiter_got{false};
  std::jthread waiting([&] {
    if (waiter.try_lock_for(60s)) {
      waiter_got = true;
      waiter.unlock();
    }
  });
  const auto until = steady::now() + scaled(10s);
  while (find_queue_entries(db, "q-1").size() < 2 && steady::now() < until) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(find_queue_entries(db, "q-1").size(), 2u) << "the waiter never took its place";

  // Dead: behind the live ones on the same names (no check of theirs looks behind them), and
  // on names of their own, many entries to a name (batches, keys of three columns on MySQL).
  insert_queue_entries(db, {.prefix = "q-", .count = 3, .kind = 'F', .expires_in = -2min});
  insert_queue_entries(db, {.prefix = "r-", .count = 2, .kind = 'R', .writers = false, .expires_in = -2min});
  insert_queue_entries(db, {.prefix = "gone-", .count = 1200, .names = 3, .kind = 'F', .expires_in = -2min});
  insert_queue_entries(db, {.prefix = "gone-", .count = 600, .names = 2, .kind = 'R', .expires_in = -2min});
  insert_queue_entries(db, {.prefix = "recent-", .count = 5, .kind = 'R', .expires_in = -2s});
  // Live places written by hand: a waiting reader behind the dead ones.
  insert_queue_entries(
      db, {.prefix = "gone-", .count = 1, .kind = 'R', .writers = false, .expires_in = 1h, .session = "live-session"});
  ASSERT_EQ(list_queue_entries(db).size(), 4u + 3 + 2 + 1200 + 600 + 5 + 1);
  const auto fence_before = fence_source_value(db);

  std::vector<std::uint64_t> batches;
  EXPECT_EQ(reap(db, {.batch_size = 700, .grace = 1min, .on_batch = [&](std::uint64_t n) { batches.push_back(n); }}),
            3u + 2 + 1200 + 600);
  EXPECT_EQ(batches, (std::vector<std::uint64_t>{0, 700, 700, 405})) << "no lock rows, then the queue's batches";
  EXPECT_EQ(fence_source_value(db), fence_before) << "the ticket source must not be touched";

  const auto left = list_queue_entries(db);
  ASSERT_EQ(left.size(), 4u + 5 + 1);
  for (const auto& e : left) EXPECT_EQ(e.expired, e.resource == "recent-1") << e.resource << " ticket " << e.fence;
  EXPECT_EQ(reap(db), 5u) << "without a grace, the recently expired ones";
  EXPECT_TRUE(holder.holds());
  EXPECT_TRUE(reader.holds_shared());
  EXPECT_TRUE(other_reader.holds_shared());
  const auto q = find_queue_entries(db, "q-1", queue_lock_kind::fair);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_TRUE(q[0].holds);
  EXPECT_FALSE(q[1].holds) << "the live waiter keeps its place";
  EXPECT_FALSE(waiter_got.load());
  holder.unlock();
  waiting.join();
  EXPECT_TRUE(waiter_got.load()) << "and gets its turn";
  const auto gone = find_queue_entries(db, "gone-1", queue_lock_kind::rw);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_TRUE(gone[0].holds) << "a live waiter whose dead places ahead were reaped holds";
}

// Dialects with row locks (SQLite has none).
class ReaperRowLockTest : public ReaperTest {};

// A transaction that holds one expired row FOR UPDATE (e.g. a RowLock or an acquire in flight)
// must not make the reaper wait: the pass skips that row and finishes at once.
TEST_P(ReaperRowLockTest, ARowHeldForUpdateDoesNotStallThePass) {
  auto db = open();
  insert_rows(db, {.prefix = "dead-", .count = 100, .expires_in = -60s});
  auto& impl = detail::database_access::impl(db);
  auto holder = impl.borrow();
  holder->exec_direct(impl.sql().begin);
  const detail::value key[] = {std::string("dead-42")};
  ASSERT_EQ(holder->exec("SELECT resource FROM " + table_ + " WHERE resource = $1 FOR UPDATE", key).rows.size(), 1u);

  const auto started = steady::now();
  EXPECT_EQ(reap(db, {.batch_size = 30}), 99u);
  EXPECT_LT(steady::now() - started, scaled(3s)) << "the reaper waited for the locked row";
  EXPECT_TRUE(column(db, "dead-42", "resource").has_value());

  holder->exec_direct(impl.sql().rollback);
  EXPECT_EQ(reap(db), 1u);
  EXPECT_EQ(rows(db), 0);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, ReaperTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(ServerTargets, ReaperRowLockTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
