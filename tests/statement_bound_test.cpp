// Every statement sqllock sends ends within its bound on a network that silently stops carrying
// packets. The lock handle reaches the server through a TCP proxy (support/tcp_proxy) that is then
// frozen: no error, no reset, the statement just never gets its answer — as when packets are
// dropped or the server stopped. Without the statement timer each case below would block until
// TCP gives up (about 15 minutes).
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "core/handle/database_impl.hpp"
#include "driver/statement_bound.hpp"
#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/reaper.hpp"
#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/tcp_proxy.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// What a bound may be overrun by: the timer's wake-up, the client library's return, scheduling on
// a loaded machine (stretched in a sanitizer build).
const auto kSlack = scaled(700ms);

std::chrono::milliseconds since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
}

class StatementBoundTest : public LockTableTest {
 protected:
  // A handle on the test's lock table through `proxy`, with the query item `query` ("" for none).
  database through(const tcp_proxy& proxy, const std::string& query = "") const {
    database_options o;
    o.table = table_;
    return database(query.empty() ? proxy.uri() : with_query(proxy.uri(), query), o);
  }

  void report(const char* what, std::chrono::milliseconds took) const {
    std::printf("[ info ] %s: %s ended after %lld ms\n", GetParam().name.c_str(), what,
                static_cast<long long>(took.count()));
  }
};

TEST_P(StatementBoundTest, AStatementOnAFrozenConnectionFailsAtItsBound) {
  tcp_proxy proxy(GetParam().uri);
  const database db = through(proxy, "statement_timeout=1s");
  auto conn = detail::database_access::impl(db).borrow();
  conn->exec_direct("SELECT 1");
  proxy.freeze();
  const auto start = clock_type::now();
  try {
    conn->exec_direct("SELECT 1");
    ADD_FAILURE() << "a statement on a frozen connection returned";
  } catch (const connection_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bound of 1 s"), std::string::npos) << what;
    EXPECT_NE(what.find("statement_timeout"), std::string::npos) << "the error names the setting: " << what;
  }
  const auto took = since(start);
  report("a statement", took);
  EXPECT_GE(took, 1s) << "not cut off before its bound";
  EXPECT_LE(took, 1s + kSlack);
  EXPECT_TRUE(conn->broken()) << "the pool must discard the connection";
}

TEST_P(StatementBoundTest, ATimedAcquireWhoseConnectionFreezesEndsByItsDeadline) {
  tcp_proxy proxy(GetParam().uri);
  const database direct = open();
  // A bound longer than the deadline plus its grace: the deadline must win.
  const database waiting = through(proxy, "statement_timeout=4s");
  const std::string name = unique_name("frozen_wait");
  table_lock holder(direct, name);
  holder.lock();
  table_lock waiter(waiting, name);
  ASSERT_FALSE(waiter.try_lock()) << "connected, and the lock is held elsewhere";
  std::jthread freezer([&] {
    std::this_thread::sleep_for(300ms);  // mid-wait
    proxy.freeze();
  });
  const auto start = clock_type::now();
  try {
    EXPECT_FALSE(waiter.try_lock_for(2s));
  } catch (const outcome_unknown& e) {
    // The attempt in flight was cut off: it may have committed, which only the lease resolves.
    EXPECT_NE(std::string(e.what()).find("deadline"), std::string::npos) << e.what();
  }
  const auto took = since(start);
  report("try_lock_for(2s)", took);
  EXPECT_LE(took, 2s + detail::kDeadlineGrace + kSlack) << "the wait's deadline plus the grace";
  holder.unlock();
}

TEST_P(StatementBoundTest, AReleaseOnAFrozenConnectionEndsAtItsBoundWithOutcomeUnknown) {
  tcp_proxy proxy(GetParam().uri);
  const database db = through(proxy, "statement_timeout=1s");
  table_lock lock(db, unique_name("frozen_release"));
  lock.lock();
  proxy.freeze();
  const auto start = clock_type::now();
  EXPECT_THROW(lock.release(), outcome_unknown) << "the release may have committed";
  const auto took = since(start);
  report("release()", took);
  EXPECT_LE(took, 1s + kSlack);
}

TEST_P(StatementBoundTest, AReaperPassOnAFrozenConnectionEndsAtItsBound) {
  tcp_proxy proxy(GetParam().uri);
  const database db = through(proxy, "statement_timeout=1s");
  EXPECT_EQ(reap(db), 0u) << "connected: nothing to reap";
  proxy.freeze();
  const auto start = clock_type::now();
  EXPECT_THROW(reap(db), connection_error);
  const auto took = since(start);
  report("reap()", took);
  EXPECT_LE(took, 1s + kSlack);
}

// A cut-off on a network that still carries packets (the server is merely slow to answer: the
// statement waits for a row lock another transaction holds) must end the statement on the server
// too. Otherwise the server goes on waiting — holding whatever locks the statement took already —
// and the retry on a new connection queues behind it. PostgreSQL notices the closed client itself
// (client_connection_check_interval, which sqllock sets); MariaDB is sent KILL QUERY.
TEST_P(StatementBoundTest, AStatementCutOffWhileWaitingForARowLockEndsOnTheServerToo) {
  const database owner(GetParam().owner_uri);
  const std::string table = unique_name("cut_wait");
  auto admin = detail::database_access::impl(owner).borrow();
  admin->exec_direct("CREATE TABLE " + table + " (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)");
  admin->exec_direct("INSERT INTO " + table + " VALUES (1, 0)");
  const std::string waiting_sql = "UPDATE " + table + " SET n = n + 1 WHERE id = 1";
  // How many statements of that text the server is still running, other than `admin`'s own.
  const std::string count_sql = GetParam().dialect == dialect_kind::postgresql
                                    ? "SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query = '" +
                                          waiting_sql + "'"
                                    : "SELECT COUNT(*) FROM information_schema.processlist WHERE info = '" +
                                          waiting_sql + "'";
  const auto running = [&] {
    const auto r = admin->exec_direct(count_sql);
    return std::stoi(r.rows.at(0).at(0).value_or("0"));
  };

  auto blocker = detail::database_access::impl(owner).borrow();
  blocker->exec_direct(GetParam().dialect == dialect_kind::postgresql ? "BEGIN" : "START TRANSACTION");
  blocker->exec_direct("SELECT n FROM " + table + " WHERE id = 1 FOR UPDATE");

  const database bounded(with_query(GetParam().owner_uri, "statement_timeout=1s"));
  auto conn = detail::database_access::impl(bounded).borrow();
  {
    std::jthread waiter([&] {
      const auto start = clock_type::now();
      EXPECT_THROW(conn->exec_direct(waiting_sql), connection_error) << "the row is locked: the statement must wait";
      report("a statement waiting for a row lock", since(start));
    });
    std::this_thread::sleep_for(400ms);
    EXPECT_EQ(running(), 1) << "the server does not show the waiting statement (so the check below proves nothing)";
  }
  const auto cut = clock_type::now();
  bool ended = false;
  while (!ended && since(cut) < 2s + kSlack) {
    ended = running() == 0;
    if (!ended) std::this_thread::sleep_for(50ms);
  }
  report("the server's copy of the statement", since(cut));
  EXPECT_TRUE(ended) << "the server still runs the statement the client cut off";
  blocker->exec_direct("COMMIT");
  const auto n = admin->exec_direct("SELECT n FROM " + table + " WHERE id = 1");
  EXPECT_EQ(n.rows.at(0).at(0).value_or(""), "0") << "the cut-off statement took effect after all";
  admin->exec_direct("DROP TABLE " + table);
}

// A session lock's timed wait (advisory_lock: pg_advisory_lock under lock_timeout; named_lock:
// GET_LOCK with a timeout) is one statement that waits on the server: its bound covers the wait.
template <class L>
void wait_longer_than_the_bound(const database& bounded, const database& other, const std::string& name) {
  L holder(other, name);
  holder.lock();
  L waiter(bounded, name);
  const auto start = clock_type::now();
  EXPECT_FALSE(waiter.try_lock_for(2s)) << "held elsewhere all along";
  const auto took = since(start);
  std::printf("[ info ] a 2 s server-side wait under a 500 ms bound ended after %lld ms\n",
              static_cast<long long>(took.count()));
  EXPECT_GE(took, 1900ms) << "the wait was cut off by the statement bound";
  EXPECT_LE(took, 2s + kSlack);
  holder.unlock();
}

TEST_P(StatementBoundTest, AServerSideLockWaitLongerThanTheBoundIsNotCutOff) {
  database_options o;
  o.table = table_;
  const database bounded(with_query(GetParam().uri, "statement_timeout=500ms"), o);
  const std::string name = unique_name("long_wait");
  if (GetParam().dialect == dialect_kind::postgresql)
    wait_longer_than_the_bound<advisory_lock>(bounded, open(), name);
  else
    wait_longer_than_the_bound<named_lock>(bounded, open(), name);
}

INSTANTIATE_TEST_SUITE_P(Servers, StatementBoundTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
