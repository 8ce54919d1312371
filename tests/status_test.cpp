// The operator view of the lock table (list_locks, find_lock, list_advisory_locks) and forced
// release on every driver × dialect pair.
#include <unistd.h>

#include <atomic>
#include <regex>
#include <thread>
#include <tuple>
#include <type_traits>

#include "core/handle/database_impl.hpp"
#include "sqllock/error.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/rw_lock.hpp"
#include "sqllock/status.hpp"
#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/lock_rows.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

std::string host_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

bool eventually(const std::function<bool()>& ready, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

table_lock_options with_ttl(std::chrono::milliseconds ttl, std::function<void()> on_lost = {}) {
  table_lock_options o;
  o.ttl = ttl;
  o.on_lost = std::move(on_lost);
  return o;
}

class StatusTest : public LockTableTest {};

TEST_P(StatusTest, ListsEveryHolderAndMarksExpiredRows) {
  auto db1 = open();
  auto db2 = open();
  table_lock a(db1, "alpha", with_ttl(30s));
  table_lock b(db2, "beta", with_ttl(20s));
  a.lock();
  a.lock();  // re-entered: count 2
  b.lock();
  insert_rows(db1, {.prefix = "gamma-", .count = 1, .expires_in = -5s});

  const auto locks = list_locks(db1);
  ASSERT_EQ(locks.size(), 3u);
  EXPECT_EQ(locks[0].resource, "alpha");
  EXPECT_EQ(locks[1].resource, "beta");
  EXPECT_EQ(locks[2].resource, "gamma-1");

  const auto& la = locks[0];
  EXPECT_EQ(la.holder_host, host_name());
  EXPECT_EQ(la.holder_pid, ::getpid());
  EXPECT_FALSE(la.holder_thread.empty());
  EXPECT_EQ(la.count, 2);
  EXPECT_EQ(la.fence, a.fence());
  EXPECT_FALSE(la.expired);
  EXPECT_GT(la.expires_in, 25s);
  EXPECT_LE(la.expires_in, 30s);
  EXPECT_TRUE(std::regex_match(la.acquired_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << la.acquired_at;
  EXPECT_FALSE(la.owner.empty());

  EXPECT_EQ(locks[1].count, 1);
  EXPECT_EQ(locks[1].fence, b.fence());
  EXPECT_LE(locks[1].expires_in, 20s);

  EXPECT_TRUE(locks[2].expired);
  EXPECT_LE(locks[2].expires_in, -4s);
  EXPECT_GE(locks[2].expires_in, -60s);
  EXPECT_EQ(locks[2].holder_host, "test-host");
}

TEST_P(StatusTest, FindsOneLockByItsExactName) {
  auto db = open();
  // Any UTF-8 without NUL is a valid name: quotes, backslashes, control characters.
  const std::string odd = "we\"ird\\ \n\t\x01 名前 'x'";
  table_lock l(db, odd);
  l.lock();
  const auto found = find_lock(db, odd);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->resource, odd);
  EXPECT_EQ(found->fence, l.fence());
  EXPECT_FALSE(find_lock(db, "WE\"IRD").has_value());
  EXPECT_FALSE(find_lock(db, "nobody").has_value());
  EXPECT_THROW(find_lock(db, ""), invalid_argument);
  EXPECT_THROW(find_lock(db, std::string("a\0b", 3)), invalid_argument);
}

TEST_P(StatusTest, AnEmptyTableListsNothingAndAMissingOneIsASchemaError) {
  auto db = open();
  EXPECT_TRUE(list_locks(db).empty());
  EXPECT_TRUE(list_queue_entries(db).empty());
  EXPECT_TRUE(find_queue_entries(db, "nobody").empty());
  database_options o;
  o.table = unique_name("nope");
  database missing(GetParam().uri, o);
  EXPECT_THROW(list_locks(missing), schema_error);
  EXPECT_THROW(force_release(missing, "x"), schema_error);
  EXPECT_THROW(list_queue_entries(missing), schema_error);
  EXPECT_THROW(force_release_queue_entries(missing, "x"), schema_error);
}

// Places taken in the wait queue by waiters on threads of their own, each on its own handle (its
// own owner); they give up after a minute, or take the lock once their turn comes and let it go.
class queue_waiters {
 public:
  // Starts a waiter of `lock`'s write (or read) mode and returns once its place is in the queue.
  template <class Lock>
  void add(const database& db, const std::string& name, bool write, std::function<void()> on_turn = {}) {
    const auto before = find_queue_entries(db, name).size();
    threads_.emplace_back([db, name, write, on_turn = std::move(on_turn)] {
      Lock lock(db, name);
      bool got = false;
      if constexpr (std::is_same_v<Lock, rw_lock>) {
        got = write ? lock.try_lock_for(60s) : lock.try_lock_shared_for(60s);
      } else {
        static_cast<void>(write);  // a fair_lock has one mode
        got = lock.try_lock_for(60s);
      }
      if (!got) return;
      if (on_turn) on_turn();
      if constexpr (std::is_same_v<Lock, rw_lock>) {
        if (!write) return lock.unlock_shared();
      }
      lock.unlock();
    });
    ASSERT_TRUE(eventually([&] { return find_queue_entries(db, name).size() > before; }, 10s))
        << "the waiter never took its place";
  }

 private:
  std::vector<std::jthread> threads_;
};

TEST_P(StatusTest, QueueEntriesAreListedInTicketOrderWithWhoHoldsAndWhoWaits) {
  auto db = open();
  // The read-write lock "catalog": two readers hold, a writer waits for them, and a reader that
  // came after the writer waits for the writer.
  rw_lock reader1(open(), "catalog");
  rw_lock reader2(open(), "catalog");
  ASSERT_TRUE(reader1.try_lock_shared());
  ASSERT_TRUE(reader2.try_lock_shared());
  // The fair lock "catalog" (another queue) and "printer": a holder and a waiter.
  fair_lock fair_holder(open(), "printer", {.ttl = 20s});
  fair_holder.lock();
  fair_lock other_kind(open(), "catalog");
  ASSERT_TRUE(other_kind.try_lock()) << "a fair lock of the name is not in the read-write lock's queue";
  // An expired place: its holder stopped renewing (as if it had died) and nobody is behind it.
  fair_lock dead(open(), "stale",
                 {.ttl = 100ms, .auto_renew = false, .on_unlock_error = [](const std::exception&) {}});  // lost
  dead.lock();
  std::atomic<bool> writer_done{false};
  queue_waiters waiters;
  // The writer holds, once it is its turn, until the test is done with it.
  waiters.add<rw_lock>(open(), "catalog", /*write=*/true, [&] { eventually([&] { return writer_done.load(); }, 30s); });
  waiters.add<rw_lock>(open(), "catalog", /*write=*/false);
  waiters.add<fair_lock>(open(), "printer", /*write=*/true);
  std::this_thread::sleep_for(300ms);

  const auto all = list_queue_entries(db);
  ASSERT_EQ(all.size(), 8u);
  // By name, then kind (fair before rw), then ticket.
  const std::vector<std::tuple<std::string, queue_lock_kind, std::int64_t, bool, bool, std::int64_t>> expected{
      // resource, kind, position, writer, holds, blockers
      {"catalog", queue_lock_kind::fair, 1, true, true, 0},  {"catalog", queue_lock_kind::rw, 1, false, true, 0},
      {"catalog", queue_lock_kind::rw, 2, false, true, 0},   {"catalog", queue_lock_kind::rw, 3, true, false, 2},
      {"catalog", queue_lock_kind::rw, 4, false, false, 1},  {"printer", queue_lock_kind::fair, 1, true, true, 0},
      {"printer", queue_lock_kind::fair, 2, true, false, 1}, {"stale", queue_lock_kind::fair, 1, true, false, 0}};
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& e = all[i];
    SCOPED_TRACE("entry " + std::to_string(i) + ": " + e.resource + " ticket " + std::to_string(e.fence));
    const auto& [resource, kind, position, writer, holds, blockers] = expected[i];
    EXPECT_EQ(e.resource, resource);
    EXPECT_EQ(e.kind, kind);
    EXPECT_EQ(e.position, position);
    EXPECT_EQ(e.writer(), writer);
    EXPECT_EQ(e.write_levels, writer ? 1 : 0);
    EXPECT_EQ(e.read_levels, writer ? 0 : 1);
    EXPECT_EQ(e.count, 1);
    EXPECT_EQ(e.holds, holds);
    EXPECT_EQ(e.blockers, blockers);
    EXPECT_EQ(e.expired, e.resource == "stale");
    EXPECT_EQ(e.holder_pid, ::getpid());
    EXPECT_EQ(e.holder_host, host_name());
    EXPECT_FALSE(e.holder_thread.empty());
    EXPECT_FALSE(e.owner.empty());
    EXPECT_TRUE(std::regex_match(e.acquired_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
        << e.acquired_at;
    if (i > 0 && all[i - 1].resource == e.resource && all[i - 1].kind == e.kind) {
      EXPECT_GT(e.fence, all[i - 1].fence) << "ticket order";
    }
  }
  EXPECT_EQ(all[0].fence, other_kind.fence());
  EXPECT_EQ(all[1].fence, reader1.fence());
  EXPECT_EQ(all[2].fence, reader2.fence());
  EXPECT_EQ(all[5].fence, fair_holder.fence());
  EXPECT_GT(all[5].expires_in, 15s);
  EXPECT_LE(all[5].expires_in, 20s);
  EXPECT_LE(all[7].expires_in, 0ms);

  const auto rw_only = find_queue_entries(db, "catalog", queue_lock_kind::rw);
  ASSERT_EQ(rw_only.size(), 4u);
  EXPECT_EQ(rw_only[3].fence, all[4].fence);
  EXPECT_EQ(find_queue_entries(db, "catalog").size(), 5u);
  EXPECT_EQ(find_queue_entries(db, "catalog", queue_lock_kind::fair).size(), 1u);
  EXPECT_TRUE(find_queue_entries(db, "printer", queue_lock_kind::rw).empty());
  EXPECT_TRUE(find_queue_entries(db, "CATALOG").empty()) << "names are exact";
  EXPECT_THROW(find_queue_entries(db, ""), invalid_argument);
  EXPECT_TRUE(list_locks(db).empty()) << "queue entries are not lock rows";

  // The readers leave: the writer's turn; the reader behind it still waits for it.
  reader1.unlock_shared();
  reader2.unlock_shared();
  EXPECT_TRUE(eventually([&] { return find_queue_entries(db, "catalog", queue_lock_kind::rw).size() == 2; }, 10s));
  const auto next = find_queue_entries(db, "catalog", queue_lock_kind::rw);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_TRUE(next[0].writer() && next[0].holds && next[0].position == 1);
  EXPECT_TRUE(!next[1].writer() && !next[1].holds && next[1].blockers == 1 && next[1].position == 2);
  writer_done = true;
  fair_holder.unlock();
  other_kind.unlock();
}

TEST_P(StatusTest, ForcedReleaseOfAQueueDeletesItsPlacesAndItsHolderLearnsItLostTheLock) {
  auto holder_db = open();
  auto ops = open();
  std::atomic<bool> lost{false};
  fair_lock held(holder_db, "stuck-queue", {.ttl = 600ms, .on_lost = [&] { lost = true; }});
  held.lock();
  const auto old_ticket = held.fence();
  const auto token = held.lost_token();
  rw_lock other_kind(open(), "stuck-queue");
  ASSERT_TRUE(other_kind.try_lock());
  std::atomic<std::int64_t> waiter_ticket{0};
  queue_waiters waiters;
  auto waiter_db = open();
  waiters.add<fair_lock>(waiter_db, "stuck-queue", /*write=*/true, [&] {
    const auto mine = find_queue_entries(waiter_db, "stuck-queue", queue_lock_kind::fair);
    waiter_ticket = mine.empty() ? -1 : mine[0].fence;
  });

  const auto gone = force_release_queue_entries(ops, "stuck-queue", queue_lock_kind::fair);
  ASSERT_EQ(gone.size(), 2u);
  EXPECT_EQ(gone[0].fence, old_ticket);
  EXPECT_TRUE(gone[0].holds);
  EXPECT_EQ(gone[0].position, 1);
  EXPECT_EQ(gone[0].holder_pid, ::getpid());
  EXPECT_EQ(gone[0].holder_host, host_name());
  EXPECT_FALSE(gone[1].holds);
  EXPECT_EQ(gone[1].position, 2);
  EXPECT_GT(gone[1].fence, old_ticket);
  EXPECT_EQ(find_queue_entries(ops, "stuck-queue", queue_lock_kind::rw).size(), 1u) << "the other kind's queue stays";

  // The holder's next renewal (every ttl/3) finds its place gone.
  EXPECT_TRUE(eventually([&] { return lost.load(); }, 3s)) << "on_lost never fired";
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(held.holds());
  EXPECT_THROW(held.release(), not_held);
  // The waiter queued again and, with nobody ahead, got its turn with a higher ticket.
  EXPECT_TRUE(eventually([&] { return waiter_ticket.load() != 0; }, 10s)) << "the waiter never got its turn";
  EXPECT_GT(waiter_ticket.load(), gone[1].fence);
  EXPECT_TRUE(eventually([&] { return find_queue_entries(ops, "stuck-queue", queue_lock_kind::fair).empty(); }, 10s))
      << "the waiter let go";

  // Without a kind, every queue of the name.
  const auto rest = force_release_queue_entries(ops, "stuck-queue");
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].kind, queue_lock_kind::rw);
  EXPECT_EQ(rest[0].fence, other_kind.fence());
  EXPECT_TRUE(force_release_queue_entries(ops, "stuck-queue").empty());
  EXPECT_TRUE(force_release_queue_entries(ops, "never-queued").empty());
  EXPECT_THROW(force_release_queue_entries(ops, std::string("a\0b", 3)), invalid_argument);
  EXPECT_THROW(other_kind.release(), not_held) << "its place was deleted too";
}

TEST_P(StatusTest, ForceReleaseDeletesAnyOwnersRowAndTheHolderLearnsItLostTheLock) {
  auto holder_db = open();
  auto operator_db = open();
  std::atomic<bool> lost{false};
  table_lock held(holder_db, "stuck-job", with_ttl(600ms, [&] { lost = true; }));
  held.lock();
  const auto old_fence = held.fence();
  const auto token = held.lost_token();

  const auto gone = force_release(operator_db, "stuck-job");
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->resource, "stuck-job");
  EXPECT_EQ(gone->holder_pid, ::getpid());
  EXPECT_EQ(gone->holder_host, host_name());
  EXPECT_EQ(gone->fence, old_fence);
  EXPECT_EQ(rows(operator_db), 0);

  // The next renewal (every ttl/3) finds the row gone.
  EXPECT_TRUE(eventually([&] { return lost.load(); }, 3s)) << "on_lost never fired";
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(held.holds());

  table_lock next(operator_db, "stuck-job");
  ASSERT_TRUE(next.try_lock());
  EXPECT_GT(next.fence(), old_fence);
  EXPECT_THROW(held.release(), not_held);  // the old holder cannot touch its successor's row
  EXPECT_TRUE(next.holds());
  EXPECT_EQ(rows(operator_db), 1);

  EXPECT_FALSE(force_release(operator_db, "never-held").has_value());
}

TEST_P(StatusTest, AdvisoryLocksAreListedOnPostgreSqlOnly) {
  auto db = open();
  if (GetParam().dialect != dialect_kind::postgresql) {
    EXPECT_THROW(list_advisory_locks(db), not_supported);
    return;
  }
  auto& impl = detail::database_access::impl(db);
  auto conn = impl.borrow();
  const auto pid = std::stoll(conn->exec_direct("SELECT pg_backend_pid()").rows.at(0).at(0).value());
  conn->exec_direct("SELECT pg_advisory_lock(CAST(-1 AS bigint))");
  conn->exec_direct("SELECT pg_advisory_lock(CAST(81985529216486895 AS bigint))");  // 0x0123456789abcdef
  conn->exec_direct("SELECT pg_advisory_lock_shared(7, -2)");

  const auto locks = list_advisory_locks(db);
  auto find = [&](std::vector<std::int64_t> keys) -> const advisory_lock_info* {
    for (const auto& l : locks)
      if (l.keys == keys && l.pid == pid) return &l;
    return nullptr;
  };
  const auto* minus_one = find({-1});
  ASSERT_NE(minus_one, nullptr);
  EXPECT_EQ(minus_one->mode, "ExclusiveLock");
  EXPECT_TRUE(minus_one->granted);
  EXPECT_NE(find({81985529216486895}), nullptr);
  const auto* pair = find({7, -2});
  ASSERT_NE(pair, nullptr);
  EXPECT_EQ(pair->mode, "ShareLock");
  conn->exec_direct("SELECT pg_advisory_unlock_all()");
}

INSTANTIATE_TEST_SUITE_P(AllTargets, StatusTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
