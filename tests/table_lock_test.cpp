// What only table_lock does, on every driver × dialect pair: the lock row, leases, renewal, fences
// and the statement clock. The contract every lock kind shares (refusal, re-entry, over-release,
// timed waits, threads, bad names) is tested once for all kinds in tests/contract/.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/handle/database_impl.hpp"
#include "common/identity.hpp"
#include "core/lease/lease_registry.hpp"
#include "core/lease/table_store.hpp"
#include "sqllock/error.hpp"
#include "sqllock/table_lock.hpp"
#include "support/client_sessions.hpp"
#include "support/lockable.hpp"
#include "support/lock_fixture.hpp"
#include "support/lock_rows.hpp"
#include "support/program.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// The standard library's lock wrappers work with table_lock.
static_assert(std_wrappable<table_lock>);

class TableLockTest : public LockTableTest {
 protected:
  table_lock_options opts(std::chrono::milliseconds ttl = 30s, bool renew = true) {
    table_lock_options o;
    o.ttl = ttl;
    o.auto_renew = renew;
    return o;
  }
};

TEST_P(TableLockTest, AcquireWritesHolderIdentityAndReleaseDeletesTheRow) {
  auto db = open();
  table_lock lock(db, "job");
  ASSERT_TRUE(lock.try_lock());
  EXPECT_TRUE(lock.holds());
  EXPECT_EQ(rows(db), 1);
  EXPECT_EQ(column(db, "job", "count"), "1");
  EXPECT_EQ(column(db, "job", "holder_pid"), std::to_string(::getpid()));
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(column(db, "job", "holder_host"), std::string(host));
  EXPECT_EQ(column(db, "job", "holder_thread"), std::to_string(::gettid())) << "the kernel's id of the locking thread";
  EXPECT_GT(lock.fence(), 0);
  lock.unlock();
  EXPECT_FALSE(lock.holds());
  EXPECT_EQ(rows(db), 0);
}

TEST_P(TableLockTest, ExpiredLeaseIsTakenOverAndTheLateHolderCannotReleaseIt) {
  auto db1 = open();
  auto db2 = open();
  // Long enough for the grant and next's attempt to come back within the lease on a slow machine.
  const auto ttl = scaled(300ms);
  table_lock late(db1, "lease", opts(ttl, false));
  table_lock next(db2, "lease");
  ASSERT_TRUE(late.try_lock());
  const auto old_fence = late.fence();
  EXPECT_FALSE(next.try_lock());
  // From after the grant came back, so past the lease by both clocks (they tick in milliseconds).
  std::this_thread::sleep_for(ttl + 100ms);
  EXPECT_FALSE(late.holds());  // by the local clock the lease is over
  ASSERT_TRUE(next.try_lock());
  EXPECT_GT(next.fence(), old_fence);
  EXPECT_THROW(late.release(), not_held);
  EXPECT_EQ(rows(db2), 1);
  EXPECT_EQ(column(db2, "lease", "fence"), std::to_string(next.fence()));
  EXPECT_EQ(column(db2, "lease", "count"), "1");
  next.release();
}

TEST_P(TableLockTest, FenceIncreasesAcrossReleaseTakeoverAndDeletion) {
  auto db1 = open();
  auto db2 = open();
  std::vector<std::int64_t> fences;
  // Each grant and the release after it must come back within the lease, even on a slow machine.
  const auto ttl = scaled(200ms);
  table_lock a(db1, "fenced", opts(ttl, false));
  table_lock b(db2, "fenced", opts(ttl, false));
  for (int round = 0; round < 3; ++round) {  // plain release
    ASSERT_TRUE(a.try_lock());
    fences.push_back(a.fence());
    a.release();
  }
  ASSERT_TRUE(a.try_lock());  // take-over after expiry
  fences.push_back(a.fence());
  std::this_thread::sleep_for(ttl + 100ms);  // from after the grant: past the lease
  ASSERT_TRUE(b.try_lock());
  fences.push_back(b.fence());
  sql(db1, "DELETE FROM " + table_);  // the row disappears (reaper, operator)
  ASSERT_TRUE(a.try_lock());
  fences.push_back(a.fence());
  a.release();
  ASSERT_TRUE(b.try_lock());  // b's own old hold was lost; this is a new one
  fences.push_back(b.fence());
  b.release();
  for (std::size_t i = 1; i < fences.size(); ++i) EXPECT_LT(fences[i - 1], fences[i]) << "at " << i;
}

// The owner takes the lock again after a loss it never acknowledged (no release): the new hold
// replaces the lost one in the same object, and its own loss must be reported too.
TEST_P(TableLockTest, AHoldThatReplacesALostOneSignalsItsOwnLoss) {
  auto db = open();
  std::mutex mu;
  std::condition_variable cv;
  int losses = 0;
  auto o = opts(scaled(300ms), true);
  o.on_lost = [&] {
    std::lock_guard lock(mu);
    ++losses;
    cv.notify_all();
  };
  table_lock a(db, "twice", o);
  for (int round = 1; round <= 2; ++round) {
    ASSERT_TRUE(a.try_lock()) << "round " << round;
    sql(db, "DELETE FROM " + table_ + " WHERE resource = 'twice'");
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, scaled(2s), [&] { return losses == round; }))
        << "round " << round << ": " << losses << " lost signals";
  }
  EXPECT_FALSE(a.holds());
}

// A renewal reads the clock before it may wait for a row lock; meanwhile another owner of the
// same session (another thread of the process) can take the row over with a later expiry. The
// renewal then still matches the row by session, and must not move its expiry back, or the new
// holder's lease would end before the holder believes. Here the row's expiry lies beyond what
// the renewal would set, which is that situation without the timing.
TEST_P(TableLockTest, ARenewalNeverMovesAnExpiryBack) {
  auto db = open();
  insert_rows(db, {.prefix = "later-", .count = 1, .expires_in = 1h, .session = "renewer", .lease = 1h});
  sql(db, "UPDATE " + table_ + " SET expires_at = '2100-01-01 00:00:00.000' WHERE resource = 'later-1'");
  auto& impl = detail::database_access::impl(db);
  auto conn = impl.borrow();
  const auto renewed = detail::table_store(*conn, impl.sql()).renew("renewer");
  ASSERT_EQ(renewed.size(), 1u) << "the live row of the session is renewed";
  const auto expires = column(db, "later-1", "expires_at");
  ASSERT_TRUE(expires.has_value());
  EXPECT_EQ(expires->substr(0, 4), "2100") << "the renewal moved the expiry back to " << *expires;
}

TEST_P(TableLockTest, OneRenewalStatementRenewsEveryLeaseOfTheHandle) {
  auto db = open();
  const auto ttl = scaled(300ms);  // renewals are due every third of it
  table_lock a(db, "r1", opts(ttl)), b(db, "r2", opts(ttl)), c(db, "r3", opts(30s));
  ASSERT_TRUE(a.try_lock());
  ASSERT_TRUE(b.try_lock());
  ASSERT_TRUE(c.try_lock());
  // One statement reads the clock once: every row it renewed carries the same renewed_at. Every
  // renewal covers all three rows, so from the moment all of them are renewed they must agree.
  const std::string query =
      "SELECT COUNT(DISTINCT renewed_at), SUM(CASE WHEN renewed_at > acquired_at THEN 1 ELSE 0 END) FROM " + table_;
  std::string distinct, renewed;
  const bool all_renewed = eventually(
      [&] {
        const auto r = sql(db, query);
        distinct = r.rows.at(0).at(0).value_or("NULL");
        renewed = r.rows.at(0).at(1).value_or("NULL");
        return renewed == "3";
      },
      scaled(3s));
  EXPECT_TRUE(all_renewed) << "every lease is renewed, the 30 s one too; renewed: " << renewed;
  EXPECT_EQ(distinct, "1") << "all of them by one statement";
}

TEST_P(TableLockTest, ReleaseMatchesOwnerAndFenceInTheDatabase) {
  // The client believes it holds both locks; the rows say otherwise (another fence; another
  // owner). The release statement itself must refuse, leaving the rows as they are.
  auto db = open();
  table_lock fenced(db, "fenced", opts(30s, false)), owned(db, "owned", opts(30s, false));
  ASSERT_TRUE(fenced.try_lock());
  ASSERT_TRUE(owned.try_lock());
  const auto fence = fenced.fence();
  sql(db, "UPDATE " + table_ + " SET fence = fence + 1000 WHERE resource = $1", {std::string("fenced")});
  sql(db, "UPDATE " + table_ + " SET owner_token = $1 WHERE resource = $2",
      {std::string("someone-else"), std::string("owned")});
  EXPECT_THROW(fenced.release(), not_held);
  EXPECT_THROW(owned.release(), not_held);
  EXPECT_EQ(column(db, "fenced", "fence"), std::to_string(fence + 1000))
      << "a release by a stale fence changed the row";
  EXPECT_EQ(column(db, "fenced", "count"), "1");
  EXPECT_EQ(column(db, "owned", "owner_token"), "someone-else") << "a release by a non-owner changed the row";
  EXPECT_FALSE(fenced.holds());
  EXPECT_FALSE(owned.holds());
}

// Declares this thread's hold of `name` on `db` lost, as the watchdog does when it cannot confirm
// a lease in time — while the row, in this test, lives on (a renewal whose reply came too late).
void declare_lost(const database& db, const std::string& name) {
  auto& registry = detail::database_access::impl(db).registry();
  auto slot = registry.pin(name, registry.session() + "/t:" + detail::current_thread_text(), detail::lock_rows_store());
  registry.mark_lost(*slot);
  registry.unpin(slot);
}

TEST_P(TableLockTest, ARowOutlivingItsLostHoldIsDeletedNotRenewedForever) {
  auto db = open();
  std::atomic<bool> lost{false};
  const auto ttl = scaled(300ms);  // the keeper's renewals must come back within it
  auto o = opts(ttl);
  o.on_lost = [&] { lost = true; };
  table_lock victim(db, "victim", o), keeper(db, "keeper", opts(ttl));
  ASSERT_TRUE(victim.try_lock());
  ASSERT_TRUE(keeper.try_lock());  // keeps the handle's renewals running
  declare_lost(db, "victim");
  EXPECT_TRUE(lost);
  EXPECT_FALSE(victim.holds());
  EXPECT_THROW(victim.release(), not_held);
  eventually([&] { return rows(db, "resource = 'victim'") == 0; }, scaled(3s));
  EXPECT_EQ(rows(db, "resource = 'victim'"), 0) << "the handle's renewals kept a row alive that nobody holds";
  EXPECT_TRUE(keeper.holds());
  EXPECT_EQ(rows(db, "resource = 'keeper'"), 1);
}

TEST_P(TableLockTest, LockingAgainAfterALostHoldStartsAFreshHold) {
  auto db = open();
  table_lock lock(db, "again", opts(30s, false));
  ASSERT_TRUE(lock.try_lock());
  const auto fence = lock.fence();
  declare_lost(db, "again");
  ASSERT_TRUE(lock.try_lock()) << "the row is ours, so the lock is free for us";
  EXPECT_EQ(column(db, "again", "count"), "1") << "a re-entry of the lost hold's row, not a fresh hold";
  EXPECT_GT(lock.fence(), fence);
  lock.release();
  EXPECT_EQ(rows(db), 0) << "one lock, one release: the row must be gone";
}

TEST_P(TableLockTest, ExpiryUsesTheStatementClockNotAnOldTransactionStart) {
  // A holder whose statement runs inside a transaction opened long ago must still get a lease
  // measured from the statement, not from the transaction's start.
  // The lease must outlast the statements below on a slow machine; the transaction is older than
  // the lease, so a lease measured from its start would have run out before it was granted.
  const auto lease = scaled(500ms);
  auto db = open();
  auto& impl = detail::database_access::impl(db);
  auto conn = impl.borrow();
  conn->exec_direct(impl.sql().begin);
  conn->exec_direct("SELECT COUNT(*) FROM " + table_);  // the transaction's snapshot starts here
  std::this_thread::sleep_for(lease + 200ms);
  detail::table_store store(*conn, impl.sql());
  const auto got = store.acquire({"clock", "owner-x", "session-x", lease, false});
  ASSERT_TRUE(got.has_value());
  const auto left = store.lease_remaining("clock");
  conn->exec_direct(impl.sql().commit);
  ASSERT_TRUE(left.has_value());
  EXPECT_GT(*left, lease * 3 / 5) << "lease measured from the transaction start";
  // And another owner cannot take it over while it is live.
  table_lock other(db, "clock");
  EXPECT_FALSE(other.try_lock());
}

// Bad names, exact names and the other bad input every kind shares: tests/contract/.
TEST_P(TableLockTest, TtlsOutOfRangeAreRejectedAndChangeNoRow) {
  auto db = open();
  for (auto ttl : {0ms, -5ms, std::chrono::milliseconds(std::chrono::hours(24 * 366))}) {
    table_lock_options o;
    o.ttl = ttl;
    EXPECT_THROW(table_lock(db, "ttl", o), invalid_argument) << ttl.count();
  }
  EXPECT_EQ(rows(db), 0);
}

TEST_P(TableLockTest, ReleasesAreAnnouncedToWaitersWhereTheDriverCanListen) {
  auto db = open();
  auto& hub = detail::database_access::impl(db).wakeups();
  hub.join("announced");
  const auto ticket = hub.ticket("announced");
  if (GetParam().dialect != dialect_kind::postgresql || GetParam().transaction_pooler) {
    EXPECT_FALSE(ticket.has_value()) << "only PostgreSQL has NOTIFY, and not through a transaction-mode pooler; "
                                        "others must poll";
    hub.leave("announced");
    return;
  }
  ASSERT_TRUE(ticket.has_value()) << "the listener did not start";
  ASSERT_TRUE(eventually([&] { return hub.announced("announced"); }, 5s)) << "the waiter was never registered";
  const auto registered = hub.ticket("announced");  // the registration counts as a release
  EXPECT_NE(registered, ticket);
  auto other = open();
  table_lock lock(other, "announced");
  ASSERT_TRUE(lock.try_lock());
  lock.unlock();
  hub.wait("announced", *registered, clock_type::now() + 5s);
  EXPECT_NE(hub.ticket("announced"), registered) << "the release's NOTIFY never arrived";
  hub.leave("announced");
}

// A release that commits after a waiter joined but before its registration is in place sends no
// NOTIFY (nobody was registered): the registration itself then counts as a release, so the waiter
// tries again and misses nothing. (The listener registers within its next slice, up to 200 ms
// after an idle spell; the release here follows the join at once, so it mostly comes first.)
TEST_P(TableLockTest, AReleaseBeforeTheWaitersRegistrationStillEndsItsWait) {
  if (GetParam().dialect != dialect_kind::postgresql || GetParam().transaction_pooler)
    GTEST_SKIP() << "PostgreSQL's NOTIFY";
  auto db = open();
  auto holder_db = open();
  table_lock holder(holder_db, "early-release");
  ASSERT_TRUE(holder.try_lock());
  auto& hub = detail::database_access::impl(db).wakeups();
  hub.join("early-release");
  const auto ticket = hub.ticket("early-release");
  ASSERT_TRUE(ticket.has_value()) << "the listener did not start";
  holder.unlock();
  const auto start = clock_type::now();
  hub.wait("early-release", *ticket, clock_type::now() + 10s);
  EXPECT_LT(clock_type::now() - start, 5s) << "the release was missed";
  EXPECT_NE(hub.ticket("early-release"), ticket);
  hub.leave("early-release");
}

TEST_P(TableLockTest, MissingLockTableIsASchemaError) {
  database_options o;
  o.table = unique_name("never_migrated");
  database db(GetParam().uri, o);
  table_lock lock(db, "x");
  EXPECT_THROW((void)lock.try_lock(), schema_error);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, TableLockTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });
// The same contracts through PgBouncer in transaction mode (?prepare=off), on both PostgreSQL
// drivers: statement-sized locks work behind a transaction-mode pooler.
INSTANTIATE_TEST_SUITE_P(Pgbouncer, TableLockTest, ::testing::ValuesIn(pgbouncer_targets()),
                         [](const auto& info) { return info.param.name; });

// Tests that need a server: triggers that sleep, sessions the server can end.
//
// A grant that reaches the client a full lease after the attempt was sent — the process or the
// network paused between the server's grant and the client's reading of it — may already have
// been taken over, so try_lock() must undo it and report false. A trigger that sleeps past the
// lease inside the acquire statement stands in for the pause (SQLite cannot sleep in a trigger,
// and the check is in the dialect-free core).
class TableLockServerTest : public TableLockTest {
 protected:
  // Makes every re-entry (an update that raises the count; not a renewal) sleep `pause` before it
  // commits, and every grant of a new hold too unless `new_holds` is false.
  void slow_down_grants(std::chrono::milliseconds pause, bool new_holds = true) {
    // Trigger bodies take no parameters; the pause is a number this test computed.
    const std::string seconds = std::to_string(pause.count() / 1000.0);
    auto owner = open_owner();
    if (GetParam().dialect == dialect_kind::postgresql) {
      // SQL text laid out by hand: clang-format 14 would break it around each `+`.
      // clang-format off
      sql(owner, "CREATE FUNCTION " + table_ +
                     "_pause() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                     "IF TG_OP = 'INSERT' OR NEW.count > OLD.count THEN PERFORM pg_sleep(" + seconds + "); END IF; "
                     "RETURN NEW; END $$");
      // clang-format on
      sql(owner, "CREATE TRIGGER " + table_ + "_pause AFTER " + (new_holds ? "INSERT OR UPDATE" : "UPDATE") + " ON " +
                     table_ + " FOR EACH ROW EXECUTE FUNCTION " + table_ + "_pause()");
    } else {
      if (new_holds)
        sql(owner, "CREATE TRIGGER " + table_ + "_pause_ins AFTER INSERT ON " + table_ +
                       " FOR EACH ROW SET @sqllock_pause = SLEEP(" + seconds + ")");
      sql(owner, "CREATE TRIGGER " + table_ + "_pause_upd AFTER UPDATE ON " + table_ +
                     " FOR EACH ROW SET @sqllock_pause = IF(NEW.count > OLD.count, SLEEP(" + seconds + "), 0)");
    }
  }
};

TEST_P(TableLockServerTest, AGrantThatArrivesAfterItsLeaseIsUndoneAndReportedFalse) {
  // However slow the machine, the grant comes back after the pause, past the shorter lease.
  slow_down_grants(400ms);
  auto db = open();
  table_lock late(db, "late", opts(200ms, false));
  const auto start = clock_type::now();
  EXPECT_FALSE(late.try_lock()) << "a grant read 400 ms after it was sent cannot still hold a 200 ms lease";
  EXPECT_GE(clock_type::now() - start, 400ms) << "the trigger did not pause the grant";
  EXPECT_FALSE(late.holds());
  EXPECT_EQ(rows(db), 0) << "the late grant's row is deleted, not left to expire";
  EXPECT_THROW(late.release(), not_held);
}

TEST_P(TableLockServerTest, ALateReEntryIsUndoneAndLeavesTheCountAsItWas) {
  // The first grant (not slowed) and the re-entry's statement must both reach the server within
  // the lease, or the re-entry would be a take-over of an expired row; the re-entry's reply then
  // comes back after the pause, past the lease.
  const auto ttl = scaled(300ms);
  const auto pause = ttl + 100ms;
  slow_down_grants(pause, false);  // before the first lock: the DDL takes no time from the lease
  auto db = open();
  table_lock held(db, "reentry", opts(ttl, false));
  ASSERT_TRUE(held.try_lock());
  const auto fence = held.fence();
  EXPECT_FALSE(held.try_lock()) << "the re-entry came back " << pause.count() << " ms after it was sent, past its "
                                << ttl.count() << " ms lease";
  EXPECT_EQ(column(db, "reentry", "count"), "1") << "the late re-entry's count is taken back";
  EXPECT_EQ(column(db, "reentry", "fence"), std::to_string(fence));
}

// The server ends every session of this process (as a restart or an operator would): the
// next attempt on the dead pooled connection fails with a typed connection error, or succeeds
// on a fresh one, and the handle recovers without being recreated.
TEST_P(TableLockServerTest, KilledSessionsGiveTypedErrorsAndTheHandleRecovers) {
  auto db = open();
  table_lock lock(db, "revived", opts(30s, false));
  ASSERT_TRUE(lock.try_lock());
  lock.release();  // its connection is now idle in the pool
  auto admin = open_owner();
  const auto sessions = sessions_of_process(admin, ::getpid());
  ASSERT_FALSE(sessions.empty()) << "found none of this process's sessions";
  for (const auto id : sessions) EXPECT_TRUE(kill_session(admin, id));
  // The server ends a killed session asynchronously: wait until none of them is listed.
  const auto gone = [&] {
    for (const auto& s : client_sessions(admin))
      if (std::find(sessions.begin(), sessions.end(), s.id) != sessions.end()) return false;
    return true;
  };
  ASSERT_TRUE(eventually(gone, scaled(5s))) << "the server did not end the killed sessions";
  int failures = 0;
  bool locked = false;
  for (int attempt = 0; attempt < 5 && !locked; ++attempt) {
    try {
      locked = lock.try_lock();
    } catch (const connection_error& e) {
      ++failures;
      EXPECT_NE(std::string(e.what()).find("connection"), std::string::npos) << e.what();
    }
  }
  ASSERT_TRUE(locked) << "the handle did not recover after " << failures << " failed attempts";
  EXPECT_LE(failures, 2) << "each dead pooled connection may fail once, then is replaced";
  lock.release();
  EXPECT_EQ(rows(db), 0);
}

INSTANTIATE_TEST_SUITE_P(ServerTargets, TableLockServerTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
