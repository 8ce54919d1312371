// What only advisory_lock and the transaction scope do on PostgreSQL, over libpqxx and SOCI: keys,
// pg_locks, shared holders, the lock_timeout race, the transaction scope. The contract every lock
// kind shares, and not_supported elsewhere, are tested once for all kinds in tests/contract/.
#include <atomic>
#include <filesystem>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>

#include "core/session/advisory_protocol.hpp"
#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "support/lockable.hpp"
#include "support/program.hpp"
#include "support/session_lock_fixture.hpp"
#include "support/stop_after.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// The standard library's wrappers work with advisory_lock (TimedLockable and
// SharedTimedLockable).
template <class L>
concept shared_timed_lockable = requires(L& l) {
  l.lock_shared();
  { l.try_lock_shared() } -> std::same_as<bool>;
  l.unlock_shared();
  { l.try_lock_shared_for(1ms) } -> std::same_as<bool>;
  { l.try_lock_shared_until(clock_type::now()) } -> std::same_as<bool>;
  { l.try_lock_shared_until(std::chrono::system_clock::now()) } -> std::same_as<bool>;
};
static_assert(std_wrappable<advisory_lock>);
static_assert(shared_timed_lockable<advisory_lock>);
static_assert(noexcept(std::declval<advisory_lock&>().unlock_shared()));
static_assert(std::is_constructible_v<std::unique_lock<advisory_lock>, advisory_lock&, std::chrono::milliseconds>);
static_assert(std::is_constructible_v<std::shared_lock<advisory_lock>, advisory_lock&, std::chrono::milliseconds>);

// pg_locks rows (any session) granted for `key` in `mode` ("ExclusiveLock" / "ShareLock"),
// optionally only those of sessions with application_name `app`.
std::int64_t granted(const database& db, const advisory_key& key, const std::string& mode = "ExclusiveLock",
                     const std::string& app = "") {
  const auto bits = static_cast<std::uint64_t>(key.value());
  auto r = sql(db,
               "SELECT COUNT(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
               "WHERE l.locktype = 'advisory' AND l.granted AND CAST(l.classid AS bigint) = CAST($1 AS bigint) "
               "AND CAST(l.objid AS bigint) = CAST($2 AS bigint) AND l.objsubid = CAST($3 AS integer) "
               "AND l.mode = $4 AND ($5 = '' OR a.application_name = $5)",
               {static_cast<std::int64_t>(bits >> 32), static_cast<std::int64_t>(bits & 0xffffffffu),
                std::int64_t{key.is_pair() ? 2 : 1}, mode, app});
  return std::stoll(r.rows.at(0).at(0).value());
}

// The backend pid of the session holding `key`, or 0.
std::int64_t holder_pid(const database& db, const advisory_key& key) {
  const auto bits = static_cast<std::uint64_t>(key.value());
  auto r = sql(db,
               "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
               "AND CAST(classid AS bigint) = CAST($1 AS bigint) AND CAST(objid AS bigint) = CAST($2 AS bigint) "
               "AND objsubid = CAST($3 AS integer)",
               {static_cast<std::int64_t>(bits >> 32), static_cast<std::int64_t>(bits & 0xffffffffu),
                std::int64_t{key.is_pair() ? 2 : 1}});
  return r.rows.empty() ? 0 : std::stoll(r.rows[0].at(0).value());
}

// How many threads this process runs now.
std::ptrdiff_t threads() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return std::distance(begin(tasks), end(tasks));
}

class AdvisoryLockTest : public SessionLockTest {
 protected:
  // A key no other test run uses.
  static advisory_key fresh_key() { return advisory_key::from_name(unique_name("adv")); }
};

TEST_P(AdvisoryLockTest, NameKeysEqualTheDocumentedSqlExpression) {
  auto db = open();
  for (const std::string& name :
       std::vector<std::string>{"job", "nightly-report", "A", "a", "user:42", "Grüße, 世界 🙂",
                                std::string(255, 'x'), std::string("tab\there")}) {
    const auto expected = scalar(
        db, "SELECT CAST(CAST('x' || left(encode(sha256(convert_to($1, 'UTF8')), 'hex'), 16) AS bit(64)) AS bigint)",
        {name});
    EXPECT_EQ(std::to_string(advisory_key::from_name(name).value()), expected) << name;
  }
  EXPECT_EQ(advisory_key::from_name("job").value(), 6812988570718632683);  // documented example
  EXPECT_NE(advisory_key::from_name("A"), advisory_key::from_name("a"));
}

TEST_P(AdvisoryLockTest, NamedLocksUseTheirNamesKey) {
  auto db = open();
  const std::string name = unique_name("named");
  advisory_lock lock(db, name);
  EXPECT_EQ(lock.name(), name);
  EXPECT_EQ(lock.key(), advisory_key::from_name(name));
  std::lock_guard guard(lock);
  EXPECT_EQ(granted(db, advisory_key::from_name(name)), 1);
}

TEST_P(AdvisoryLockTest, IntegerKeysAndPairsAreSeparateKeySpaces) {
  auto db1 = open();
  auto db2 = open();
  // Random keys: parallel test processes share the server.
  std::random_device random;
  const auto k1 = static_cast<std::int32_t>(random() & 0x7fffffff);
  const auto k2 = static_cast<std::int32_t>(random() & 0x7fffffff);
  const advisory_key pair(k1, k2);
  const advisory_key single(pair.value());  // the same 64 bits
  advisory_lock a(db1, pair);
  advisory_lock b(db2, single);
  ASSERT_TRUE(a.try_lock());
  EXPECT_TRUE(b.try_lock()) << "(k1, k2) and the bigint with the same bits do not overlap";
  EXPECT_EQ(granted(db1, pair), 1);
  EXPECT_EQ(granted(db1, single), 1);
  advisory_lock c(db2, advisory_key(k1, k2));
  EXPECT_FALSE(c.try_lock());
  a.unlock();
  b.unlock();
  const advisory_key negative(-k1, -k2);
  advisory_lock n(db1, negative);
  ASSERT_TRUE(n.try_lock());
  EXPECT_EQ(granted(db2, negative), 1);
  n.unlock();
}

TEST_P(AdvisoryLockTest, SharedHoldersCoexistAndExcludeExclusive) {
  auto db1 = open();
  auto db2 = open();
  auto db3 = open();
  const auto key = fresh_key();
  advisory_lock r1(db1, key);
  advisory_lock r2(db2, key);
  advisory_lock w(db3, key);
  ASSERT_TRUE(r1.try_lock_shared());
  {
    std::shared_lock reader(r2, 1s);
    ASSERT_TRUE(reader.owns_lock());
    EXPECT_TRUE(r2.holds_shared());
    EXPECT_FALSE(r2.holds());
    EXPECT_EQ(granted(db3, key, "ShareLock"), 2);
    EXPECT_FALSE(w.try_lock());
    EXPECT_FALSE(w.try_lock_for(50ms));
  }
  EXPECT_FALSE(w.try_lock()) << "r1 still reads";
  r1.unlock_shared();
  ASSERT_TRUE(w.try_lock());
  EXPECT_FALSE(r1.try_lock_shared()) << "a writer excludes readers";
  EXPECT_THROW(w.release_shared(), not_held);
  w.unlock();
  EXPECT_TRUE(r1.try_lock_shared());
  r1.unlock_shared();
}

// The timing of timed waits: tests/contract/ (LockContract.ATimedWaitGivesUpAtItsDeadline).
TEST_P(AdvisoryLockTest, ATimedWaitRestoresLockTimeout) {
  auto db1 = open();
  database_options one;
  one.pool_size = 1;  // so the checks below see the connection the wait used
  auto db2 = open(one);
  const auto key = fresh_key();
  advisory_lock a(db1, key);
  advisory_lock b(db2, key);
  a.lock();
  EXPECT_FALSE(b.try_lock_for(300ms));
  EXPECT_FALSE(b.holds());
  EXPECT_EQ(scalar(db2, "SHOW lock_timeout"), "0") << "lock_timeout is reset after the wait";
  EXPECT_FALSE(b.try_lock_until(std::chrono::system_clock::now() + 50ms));
  EXPECT_EQ(scalar(db2, "SHOW lock_timeout"), "0") << "lock_timeout is reset after the wait";
  a.unlock();
}

TEST_P(AdvisoryLockTest, ATimeoutThatRacesTheGrantNeverLeaksOrMisreportsTheLock) {
  // A holder thread takes and drops the lock in a tight loop while the waiter makes many short
  // timed waits, so that grants land on the instant lock_timeout fires. After every call, what
  // the waiter reports must be what pg_locks shows for the waiter's session.
  const std::string app = unique_name("waiter");
  auto holder_db = open();
  auto checker = open();
  database waiter_db(with_query(GetParam().uri, "application_name=" + app));
  const auto key = fresh_key();
  std::atomic<bool> stop{false};
  std::thread holder([&] {
    advisory_lock h(holder_db, key);
    std::minstd_rand rng(42);
    while (!stop) {
      if (h.try_lock_for(20ms)) {
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
        h.unlock();
      }
    }
  });
  advisory_lock w(waiter_db, key);
  const auto grants_before = detail::advisory_timeout_grants();
  std::minstd_rand rng(7);
  int acquired = 0;
  int mismatches = 0;
  // At least 600 rounds, and on until the race was hit at least once (usually 2–50 times in 600).
  int rounds = 0;
  for (int i = 0; i < 600 || (detail::advisory_timeout_grants() == grants_before && i < 6000); ++i, ++rounds) {
    const bool ok = w.try_lock_for(std::chrono::microseconds(1000 + rng() % 2000));
    const bool shown = granted(checker, key, "ExclusiveLock", app) == 1;
    if (ok != shown || ok != w.holds()) ++mismatches;
    EXPECT_EQ(ok, shown) << "round " << i;
    if (ok) {
      ++acquired;
      w.unlock();
    }
    ASSERT_EQ(granted(checker, key, "ExclusiveLock", app), 0) << "round " << i << ": a lock was left behind";
  }
  stop = true;
  holder.join();
  EXPECT_EQ(mismatches, 0);
  const auto races = detail::advisory_timeout_grants() - grants_before;
  std::printf("[ info ] %d of %d timed waits acquired; %llu were granted as lock_timeout fired\n", acquired, rounds,
              static_cast<unsigned long long>(races));
  EXPECT_GT(races, 0u) << "no grant landed as lock_timeout fired: the pg_locks check after a timeout was never tested";
}

TEST_P(AdvisoryLockTest, AnOnLostCallbackMayDestroyTheLockObject) {
  auto admin = open();
  const auto threads_before = threads();  // before the handle and the lock start any
  const auto key = fresh_key();
  std::atomic<bool> destroyed{false};
  std::unique_ptr<advisory_lock> lock;
  {
    auto db = open();  // the lock object is the only user of this handle's sessions
    advisory_lock_options o;
    o.keepalive = 100ms;
    o.on_unlock_error = [](const std::exception&) {};
    o.on_lost = [&] {
      lock.reset();  // runs on the keepalive thread
      destroyed = true;
    };
    lock = std::make_unique<advisory_lock>(db, key, o);
  }
  lock->lock();
  ASSERT_EQ(scalar(admin, "SELECT pg_terminate_backend(CAST($1 AS integer))", {holder_pid(admin, key)}), "t");
  EXPECT_LE(time_until([&] { return destroyed.load(); }, scaled(3s)), scaled(1500ms));
  // The registry is torn down off the keepalive thread, by a detached thread: the test ends once
  // it is done — its keepalive thread, pingers and the teardown thread itself have all exited.
  EXPECT_TRUE(eventually([&] { return threads() <= threads_before; }, scaled(5s)))
      << threads() << " threads left, " << threads_before << " before the lock";
}

TEST_P(AdvisoryLockTest, ASessionKilledDuringAWaitThrowsConnectionError) {
  auto db1 = open();
  auto db2 = open();
  auto admin = open();
  const auto key = fresh_key();
  advisory_lock a(db1, key);
  advisory_lock b(db2, key);
  a.lock();
  std::thread killer([&] {
    // Ends the sessions waiting for the key, once b's is among them.
    const auto bits = static_cast<std::uint64_t>(key.value());
    const bool killed = eventually(
        [&] {
          return !sql(admin,
                      "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                      "AND CAST(classid AS bigint) = CAST($1 AS bigint) AND CAST(objid AS bigint) = CAST($2 AS bigint)",
                      {static_cast<std::int64_t>(bits >> 32), static_cast<std::int64_t>(bits & 0xffffffffu)})
                      .rows.empty();
        },
        10s);
    if (!killed) {
      ADD_FAILURE() << "b never waited for the key within 10 s";
      sql(admin, "SELECT pg_terminate_backend(CAST($1 AS integer))", {holder_pid(admin, key)});  // so b.lock() returns
    }
  });
  EXPECT_THROW(b.lock(), connection_error);
  killer.join();
  EXPECT_FALSE(b.holds());
  a.unlock();
  EXPECT_TRUE(b.try_lock()) << "a new session replaces the dead one";
  b.unlock();
}

// Bad names every kind shares: tests/contract/.
TEST_P(AdvisoryLockTest, BadKeysAndOptionsAreRejectedBeforeAnythingIsSent) {
  auto db = open();
  EXPECT_THROW(advisory_key::from_name(""), invalid_argument);
  advisory_lock_options o;
  o.keepalive = 0ms;
  EXPECT_THROW(advisory_lock(db, "x", o), invalid_argument);
  o.keepalive = 5s;
  o.owner = std::string(129, 'k');
  EXPECT_THROW(advisory_lock(db, "x", o), invalid_argument);
  advisory_xact_options xo;
  xo.keepalive = 2h;
  // clang-format 14 would wrap this call oddly around the empty lambda.
  // clang-format off
  EXPECT_THROW(with_advisory_xact_lock(db, "x", [] {}, xo), invalid_argument);
  // clang-format on
}

// ---- transaction scope

TEST_P(AdvisoryLockTest, XactLockIsHeldWhileTheFunctionRunsAndEndsWithTheTransaction) {
  auto db = open();
  auto other = open();
  const auto key = fresh_key();
  advisory_lock session(other, key);
  const int result = with_advisory_xact_lock(db, key, [&] {
    EXPECT_EQ(granted(other, key), 1);
    EXPECT_FALSE(session.try_lock()) << "xact and session locks on one key exclude each other";
    return 42;
  });
  EXPECT_EQ(result, 42);
  EXPECT_EQ(granted(other, key), 0);
  EXPECT_TRUE(session.try_lock());
  EXPECT_EQ(try_with_advisory_xact_lock_for(db, key, 0ms, [] { ADD_FAILURE() << "must not run"; }), false);
  EXPECT_EQ(try_with_advisory_xact_lock_for(db, key, 100ms, [] { return 1; }), std::nullopt);
  session.unlock();
  EXPECT_EQ(try_with_advisory_xact_lock_for(db, key, 100ms, [] { return 7; }), std::optional<int>(7));
  EXPECT_TRUE(
      try_with_advisory_xact_lock_for(db, key, 0ms, [](std::stop_token t) { EXPECT_FALSE(t.stop_requested()); }));
}

// try_with_advisory_xact_lock_until: to a deadline of any clock; one already past is a single
// attempt, a held key is waited for until then.
TEST_P(AdvisoryLockTest, TimedXactLockToADeadlineGivesUpThenAndRunsTheFunctionWhenFree) {
  auto db = open();
  auto other = open();
  const auto key = fresh_key();
  advisory_lock session(other, key);
  session.lock();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(try_with_advisory_xact_lock_until(db, key, std::chrono::system_clock::now() + 200ms, [] { return 1; }),
            std::nullopt);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 190ms);  // the deadline, less its conversion
  EXPECT_FALSE(try_with_advisory_xact_lock_until(db, key, std::chrono::steady_clock::now() - 1s,
                                                 [] { ADD_FAILURE() << "must not run"; }));
  session.unlock();
  EXPECT_EQ(try_with_advisory_xact_lock_until(db, key, std::chrono::steady_clock::now() + 1s, [] { return 9; }),
            std::optional<int>(9));
}

// with_advisory_xact_lock(db, key, stop, fn) and the timed forms with a stop: a stop cancels the
// waiting statement, fn does not run, and nothing stays behind; a stop before the call is one
// attempt without waiting.
TEST_P(AdvisoryLockTest, AStopEndsAnXactLockWaitWithoutRunningTheFunction) {
  auto db = open();
  auto other = open();
  const auto key = fresh_key();
  advisory_lock session(other, key);
  session.lock();
  for (const int form : {0, 1, 2}) {
    SCOPED_TRACE(form == 0   ? "with_advisory_xact_lock(stop)"
                 : form == 1 ? "try_with_advisory_xact_lock_for(30 s, stop)"
                             : "try_with_advisory_xact_lock_until(now + 30 s, stop)");
    std::stop_source stop;
    const stop_after stopper(stop, 300ms);
    const auto fn = [] {
      ADD_FAILURE() << "must not run";
      return 1;
    };
    const auto got = form == 0   ? with_advisory_xact_lock(db, key, stop.get_token(), fn)
                     : form == 1 ? try_with_advisory_xact_lock_for(db, key, 30s, stop.get_token(), fn)
                                 : try_with_advisory_xact_lock_until(db, key, std::chrono::system_clock::now() + 30s,
                                                                     stop.get_token(), fn);
    const auto took = std::chrono::steady_clock::now() - stopper.started();
    EXPECT_EQ(got, std::nullopt);
    EXPECT_GE(took, 300ms) << "ended before the stop";
    EXPECT_LT(took, scaled(1300ms)) << "the stop did not end the wait promptly";
  }
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(with_advisory_xact_lock(db, key, stop.get_token(), [] { ADD_FAILURE() << "must not run"; }))
      << "a stop before the call is one attempt, refused here";
  session.unlock();
  EXPECT_TRUE(session.try_lock()) << "the stopped wait left a lock behind";
  session.unlock();
  EXPECT_EQ(with_advisory_xact_lock(db, key, stop.get_token(), [] { return 9; }), std::optional<int>(9))
      << "a stop before the call leaves one attempt, granted on a free lock";
}

TEST_P(AdvisoryLockTest, XactLockRollsBackAndRethrowsWhenTheFunctionThrows) {
  auto db = open();
  auto other = open();
  const auto key = fresh_key();
  EXPECT_THROW(with_advisory_xact_lock(db, key, [] { throw std::runtime_error("boom"); }), std::runtime_error);
  EXPECT_EQ(granted(other, key), 0);
  advisory_lock session(other, key);
  EXPECT_TRUE(session.try_lock());
  session.unlock();
}

TEST_P(AdvisoryLockTest, XactLockWaitsForAHolderAndSharedXactLocksCoexist) {
  auto db = open();
  auto other = open();
  const auto key = fresh_key();
  advisory_lock_options o;
  o.owner = "holder";
  advisory_lock holder(other, key, o);
  holder.lock();
  const auto start = clock_type::now();  // before the releaser starts its 150 ms
  std::thread releaser([&] {
    std::this_thread::sleep_for(150ms);
    holder.unlock();
  });
  with_advisory_xact_lock(db, key, [] {});
  EXPECT_GE(clock_type::now() - start, 150ms);
  releaser.join();

  advisory_xact_options shared;
  shared.mode = advisory_mode::shared;
  holder.lock_shared();
  // clang-format off
  EXPECT_TRUE(try_with_advisory_xact_lock_for(db, key, 0ms, [] {}, shared));
  // clang-format on
  EXPECT_FALSE(try_with_advisory_xact_lock_for(db, key, 50ms, [] {}));
  holder.unlock_shared();
}

TEST_P(AdvisoryLockTest, XactLockReportsASessionThatDiedWhileTheFunctionRan) {
  auto db = open();
  auto admin = open();
  const auto key = fresh_key();
  advisory_xact_options o;
  o.keepalive = 200ms;
  bool signalled = false;
  EXPECT_THROW(with_advisory_xact_lock(
                   db, key,
                   [&](std::stop_token token) {
                     scalar(admin, "SELECT pg_terminate_backend(CAST($1 AS integer))", {holder_pid(admin, key)});
                     signalled = time_until([&] { return token.stop_requested(); }, scaled(3s)) <= scaled(1200ms);
                   },
                   o),
               lock_lost);
  EXPECT_TRUE(signalled);
}

INSTANTIATE_TEST_SUITE_P(PostgreSQL, AdvisoryLockTest, ::testing::ValuesIn(targets_of(dialect_kind::postgresql)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
