// Out-of-range durations and options, and hostile table names, through the public API on every
// driver × dialect pair: refused with invalid_argument and a message naming the option and its
// range, changing no row; zero, negative and huge waits behave as documented (one attempt, or a
// wait that really waits) for every lock kind; reserved words work as quoted table names.
#include <gtest/gtest.h>

#include <future>

#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/migrate.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/reaper.hpp"
#include "sqllock/status.hpp"
#include "sqllock/table_lock.hpp"
#include "support/bad_input.hpp"
#include "support/expect_error.hpp"
#include "support/fresh_database.hpp"
#include "support/lock_fixture.hpp"
#include "support/lock_kinds.hpp"
#include "support/lock_rows.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

// A URI of the target's scheme that nothing answers: a call that connected would fail with
// connection_error, so invalid_argument proves the input was checked first.
std::string unreachable_uri(const target& t) {
  if (t.dialect == dialect_kind::sqlite) return "sqlite:///nonexistent-sqllock-dir/locks.db";
  return t.uri.substr(0, t.uri.find("://")) + "://sqllock:secret@127.0.0.1:1/none";
}

class BadInputOptionsTest : public LockTableTest {
 protected:
  std::vector<lock_kind> kinds() const { return lock_kinds_of(GetParam().dialect); }
};

TEST_P(BadInputOptionsTest, TtlOutsideOneMsTo365DaysIsRefused) {
  auto db = open();
  const auto before = read_lock_state(db);
  for (const ms ttl :
       {ms(0), ms(-1), ms(-30000), ms::min(), std::chrono::duration_cast<ms>(24h * 365) + 1ms, ms::max()}) {
    table_lock_options o;
    o.ttl = ttl;
    expect_error<invalid_argument>([&] { table_lock(db, "ttl", o); }, {"ttl", std::to_string(ttl.count()) + " ms"},
                                   "ttl " + std::to_string(ttl.count()) + " ms");
  }
  EXPECT_EQ(read_lock_state(db), before);

  // The limits themselves are accepted, and the longest lease reaches the database intact.
  table_lock_options longest;
  longest.ttl = 24h * 365;
  table_lock year(db, "year-lease", longest);
  ASSERT_TRUE(year.try_lock());
  const auto row = find_lock(db, "year-lease");
  ASSERT_TRUE(row);
  EXPECT_GT(row->expires_in, 24h * 364) << "a 365-day lease is stored as one";
  year.release();
  table_lock_options shortest;
  shortest.ttl = 1ms;
  EXPECT_NO_THROW(table_lock(db, "ms-lease", shortest));
}

TEST_P(BadInputOptionsTest, KeepaliveOutside10msTo1HourIsRefused) {
  auto db = open();
  for (const ms keepalive : {ms(0), ms(9), ms(-1), ms::min(), std::chrono::duration_cast<ms>(1h) + 1ms, ms::max()}) {
    const std::string context = "keepalive " + std::to_string(keepalive.count()) + " ms";
    session_lock_options o;
    o.keepalive = keepalive;
    if (db.dialect() == dialect_kind::postgresql) {
      expect_error<invalid_argument>([&] { advisory_lock(db, "k", o); }, {"keepalive", "10 ms and 1 hour"}, context);
      advisory_xact_options x;
      x.keepalive = keepalive;
      bool ran = false;
      expect_error<invalid_argument>(
          [&] {
            with_advisory_xact_lock(
                db, "k", [&] { ran = true; }, x);
          },
          {"keepalive", "10 ms and 1 hour"}, context + " (xact)");
      EXPECT_FALSE(ran);
    }
    if (db.dialect() == dialect_kind::mysql)
      expect_error<invalid_argument>([&] { named_lock(db, "k", o); }, {"keepalive", "10 ms and 1 hour"}, context);
  }
}

TEST_P(BadInputOptionsTest, OwnerKeysOver128BytesAreRefused) {
  auto db = open();
  const std::string owner(129, 'o');
  table_lock_options t;
  t.owner = owner;
  expect_error<invalid_argument>([&] { table_lock(db, "o", t); }, {"owner", "128 bytes"}, "table_lock");
  session_lock_options s;
  s.owner = owner;
  if (db.dialect() == dialect_kind::postgresql)
    expect_error<invalid_argument>([&] { advisory_lock(db, "o", s); }, {"owner", "128 bytes"}, "advisory_lock");
  if (db.dialect() == dialect_kind::mysql)
    expect_error<invalid_argument>([&] { named_lock(db, "o", s); }, {"owner", "128 bytes"}, "named_lock");
}

// Zero and negative waits are one attempt: they take a free lock and give up at once on a held one.
TEST_P(BadInputOptionsTest, ZeroAndNegativeWaitsMakeOneAttempt) {
  auto db1 = open();
  auto db2 = open();
  const std::vector<lock_wait> waits{ms(0), ms(-1), std::chrono::hours(-1), std::chrono::hours::min()};
  // Advisory and named locks are server-wide, and this test runs on another driver of the same
  // server at the same time: the names are unique to this run.
  const std::string busy = unique_name("busy"), free = unique_name("free");
  for (const auto& kind : kinds()) {
    auto held = kind.take(db1, busy, std::monostate{});
    ASSERT_TRUE(held) << kind.name;
    for (std::size_t i = 0; i < waits.size(); ++i) {
      SCOPED_TRACE(kind.name + " wait #" + std::to_string(i));
      const auto t0 = steady::now();
      EXPECT_FALSE(kind.take(db2, busy, waits[i])) << "a held lock is not obtained";
      EXPECT_LT(steady::now() - t0, scaled(2s)) << "without waiting";
      EXPECT_TRUE(kind.take(db2, free + "-" + std::to_string(i), waits[i])) << "a free lock is";
    }
  }
}

// The longest wait a caller can write (std::chrono::hours::max(); milliseconds::max() where the
// API takes milliseconds) waits until the lock is free, like lock(): it must not overflow into a
// deadline in the past.
TEST_P(BadInputOptionsTest, HugeWaitsWaitUntilTheLockIsFree) {
  auto db1 = open();
  auto db2 = open();
  for (const auto& kind : kinds()) {
    SCOPED_TRACE(kind.name);
    const std::string busy = unique_name("busy-" + kind.name);  // server-wide kinds: see above
    auto held = kind.take(db1, busy, std::monostate{});
    ASSERT_TRUE(held);
    auto waiter = std::async(std::launch::async, [&] { return kind.take(db2, busy, std::chrono::hours::max()); });
    EXPECT_EQ(waiter.wait_for(300ms), std::future_status::timeout) << "it waits";
    held.reset();
    ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready) << "and gets the lock once it is free";
    EXPECT_TRUE(waiter.get());
  }
}

TEST_P(BadInputOptionsTest, HugeDeadlinesWaitUntilTheLockIsFree) {
  auto db1 = open();
  auto db2 = open();
  table_lock holder(db1, "deadline");
  ASSERT_TRUE(holder.try_lock());
  table_lock waiter_lock(db2, "deadline");
  auto waiter = std::async(std::launch::async, [&] {
    const bool got = waiter_lock.try_lock_until(std::chrono::system_clock::time_point::max());
    if (got) waiter_lock.unlock();
    return got;
  });
  EXPECT_EQ(waiter.wait_for(300ms), std::future_status::timeout) << "it waits";
  holder.unlock();
  ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
}

TEST_P(BadInputOptionsTest, ReapOptionsOutOfRangeAreRefusedAndDeleteNothing) {
  auto db = open();
  insert_rows(db, {.prefix = "expired-", .count = 1, .expires_in = -60s});
  const auto before = read_lock_state(db);
  struct bad_reap {
    std::string says;
    std::size_t batch_size;
    ms grace;
  };
  const std::vector<bad_reap> bad{
      {"batch", 0, ms(0)},
      {"batch", max_reap_batch + 1, ms(0)},
      {"grace", 1000, ms(-1)},
      {"grace", 1000, ms::min()},
      {"grace", 1000, std::chrono::duration_cast<ms>(24h * 365) + 1ms},
  };
  for (const auto& b : bad) {
    reap_options o;
    o.batch_size = b.batch_size;
    o.grace = b.grace;
    expect_error<invalid_argument>([&] { reap(db, o); }, {b.says}, "reap " + b.says);
  }
  EXPECT_EQ(read_lock_state(db), before) << "nothing reaped";
  EXPECT_EQ(reap(db), 1u) << "the control: valid options reap the expired row";
}

TEST_P(BadInputOptionsTest, ConnectTimeoutMustBePositive) {
  for (const ms timeout : {ms(0), ms(-1), ms::min()}) {
    database_options o;
    o.connect_timeout = timeout;
    expect_error<invalid_argument>([&] { database(unreachable_uri(GetParam()), o); }, {"connect_timeout", "positive"},
                                   "connect_timeout " + std::to_string(timeout.count()));
  }
}

TEST_P(BadInputOptionsTest, StatementTimeoutMustBePositiveAndAtMostADay) {
  for (const ms timeout : {ms(0), ms(-1), ms::min(), ms(24LL * 3600 * 1000 + 1), ms::max()}) {
    database_options o;
    o.statement_timeout = timeout;
    expect_error<invalid_argument>([&] { database(unreachable_uri(GetParam()), o); }, {"statement_timeout"},
                                   "statement_timeout " + std::to_string(timeout.count()));
  }
  if (GetParam().dialect == dialect_kind::sqlite) return;  // no server: the URI parameter is not read
  for (const std::string bad : {"0", "-1s", "10x", "s", "1.5s", "25h", "99999999999999999999", ""}) {
    expect_error<invalid_argument>(
        [&] { database(with_query(unreachable_uri(GetParam()), "statement_timeout=" + bad)); },
        {"statement_timeout", "1ms to 24h"}, "?statement_timeout=" + bad);
  }
}

TEST_P(BadInputOptionsTest, BadTableNamesAreRefusedBeforeConnecting) {
  auto db = open();
  const auto before = read_lock_state(db);
  for (const auto& bad : bad_table_names()) {
    database_options o;
    o.table = bad.name;
    for (const auto& uri : {GetParam().uri, unreachable_uri(GetParam())}) {
      const auto what = expect_error<invalid_argument>(
          [&] { database(uri, o); }, {"invalid lock table name", "use 1-48 letters, digits or '_'"}, bad.label);
      EXPECT_EQ(what.find('\n'), std::string::npos) << "one line, control characters escaped: " << what;
      EXPECT_EQ(what.find('\0'), std::string::npos) << what;
    }
  }
  EXPECT_EQ(read_lock_state(db), before);
}

// Reserved words and the longest name are valid table names: always quoted, never spliced bare.
// Each gets its own empty database so that the fixed names cannot meet another test's tables.
TEST_P(BadInputOptionsTest, ReservedWordTableNamesWorkBecauseTheyAreQuoted) {
  const std::string uri = fresh_database_uri(GetParam().owner_uri, GetParam().dialect);  // creates a database
  for (const auto& table : unusual_valid_table_names()) {
    SCOPED_TRACE(table);
    database_options o;
    o.table = table;
    database db1(uri, o);
    database db2(uri, o);
    ASSERT_NO_THROW(migrate(db1));
    for (const auto& kind : kinds()) {
      const std::string job = unique_name("job");  // server-wide kinds: see above
      auto held = kind.take(db1, job, std::monostate{});
      EXPECT_TRUE(held) << kind.name;
      EXPECT_FALSE(kind.take(db2, job, std::monostate{})) << kind.name;
    }
    table_lock t(db1, "job");
    ASSERT_TRUE(t.try_lock());
    ASSERT_EQ(list_locks(db2).size(), 1u);
    EXPECT_EQ(read_lock_state(db2).lock_rows.size(), 1u) << "the row is in the table of that exact name";
    insert_rows(db2, {.prefix = "old-", .count = 1, .expires_in = -5s});
    EXPECT_EQ(reap(db2), 1u);
    EXPECT_TRUE(force_release(db2, "job"));
    EXPECT_THROW(t.release(), not_held);
  }
}

INSTANTIATE_TEST_SUITE_P(bad_input, BadInputOptionsTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
