// The operator view of the lock table (list_locks, find_lock, list_advisory_locks) and forced
// release on every driver × dialect pair.
#include <unistd.h>

#include <atomic>
#include <regex>
#include <thread>

#include "core/database_impl.hpp"
#include "sqllock/error.hpp"
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
  database_options o;
  o.table = unique_name("nope");
  database missing(GetParam().uri, o);
  EXPECT_THROW(list_locks(missing), schema_error);
  EXPECT_THROW(force_release(missing, "x"), schema_error);
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
