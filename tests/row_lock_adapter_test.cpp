// Row locks inside an application's own transaction: the adapters for libpqxx, SOCI (PostgreSQL,
// MySQL, and SQLite's refusal) and MySQL Connector/C++, against the private test servers.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>

#include "sqllock/error.hpp"
#include "sqllock/migrate.hpp"
#include "support/app_sessions.hpp"
#include "support/fresh_database.hpp"
#include "support/processes.hpp"
#include "support/stop_after.hpp"
#include "support/test_env.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

class RowLockAdapterTest : public ::testing::TestWithParam<adapter_target> {
 protected:
  void SetUp() override {
    SQLLOCK_REQUIRE_SERVER(GetParam().uri);
    table_ = unique_name("lk");
    database_options o;
    o.table = table_;
    database owner(GetParam().owner_uri, o);
    migrate(owner);
    data_ = unique_name("data");
    sql(owner, "CREATE TABLE " + data_ + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
    db_ = std::make_unique<database>(GetParam().uri, o);
  }

  // A new application connection of the parameter's kind.
  std::unique_ptr<app_session> connect() const { return connect_app(GetParam().name, GetParam().uri); }

  bool mysql() const { return GetParam().dialect == dialect_kind::mysql; }
  std::int64_t data_rows() const {
    return std::stoll(sql(*db_, "SELECT COUNT(*) FROM " + data_).rows.at(0).at(0).value());
  }
  std::string insert(int id) const {
    return "INSERT INTO " + data_ + " (id, v) VALUES (" + std::to_string(id) + ", 0)";
  }

  std::string table_;
  std::string data_;
  std::unique_ptr<database> db_;
};

TEST_P(RowLockAdapterTest, CommitKeepsTheWritesAndReleasesTheLock) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("account", table_);
  a->exec(insert(1));
  b->begin();
  EXPECT_FALSE(b->try_lock("account", table_)) << "held by a's transaction";
  a->commit();
  EXPECT_TRUE(b->try_lock("account", table_)) << "a's commit released it";
  b->commit();
  EXPECT_EQ(data_rows(), 1);
  EXPECT_EQ(sql(*db_, "SELECT COUNT(*) FROM " + table_).rows.at(0).at(0), "0") << "the lock table is untouched";
}

TEST_P(RowLockAdapterTest, RollbackUndoesTheWritesAndReleasesTheLock) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("account", table_);
  a->exec(insert(1));
  a->rollback();
  b->begin();
  EXPECT_TRUE(b->try_lock("account", table_));
  b->commit();
  EXPECT_EQ(data_rows(), 0);
}

TEST_P(RowLockAdapterTest, ARefusedTryLeavesTheCallersTransactionUsable) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("busy", table_);
  b->begin();
  b->exec(insert(1));
  const auto start = clock_type::now();
  EXPECT_FALSE(b->try_lock("busy", table_));
  EXPECT_LT(clock_type::now() - start, scaled(1s));
  b->exec(insert(2));  // PostgreSQL would refuse this if the refusal had aborted the transaction
  b->commit();
  a->commit();
  EXPECT_EQ(data_rows(), 2) << "the caller's writes before and after the refusal both committed";
}

TEST_P(RowLockAdapterTest, ATimedTryGivesUpAfterTheTimeoutAndRestoresTheSetting) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("slow", table_);
  b->begin();
  const std::string show = mysql() ? "SELECT @@SESSION.innodb_lock_wait_timeout" : "SHOW lock_timeout";
  b->exec(mysql() ? "SET SESSION innodb_lock_wait_timeout = 7" : "SET LOCAL lock_timeout = '7s'");
  const auto start = clock_type::now();
  EXPECT_FALSE(b->try_lock_for("slow", 300ms, table_));
  const auto waited = clock_type::now() - start;
  EXPECT_GE(waited, mysql() ? 1s : 300ms);
  EXPECT_LT(waited, scaled(3s));
  EXPECT_EQ(b->scalar(show), mysql() ? "7" : "7s") << "the caller's setting is back after a timeout";
  a->commit();
  EXPECT_TRUE(b->try_lock_for("slow", 2s, table_));
  EXPECT_EQ(b->scalar(show), mysql() ? "7" : "7s") << "and after success";
  b->exec(insert(1));
  b->commit();
  EXPECT_EQ(data_rows(), 1);
}

// lock_row(…, stop) and try_lock_row_for(…, stop): a stop ends the wait with false, the caller's
// transaction usable (its writes before and after commit) and without the lock; a stop before the
// call leaves one attempt without waiting. MySQL's attempts last a whole second each.
TEST_P(RowLockAdapterTest, AStopEndsTheWaitAndLeavesTheTransactionUsable) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("stopped", table_);
  b->begin();
  b->exec(insert(1));
  for (const bool timed : {false, true}) {
    SCOPED_TRACE(timed ? "try_lock_row_for(30 s, stop)" : "lock_row(stop)");
    std::stop_source stop;
    const stop_after stopper(stop, 300ms);
    const bool got = timed ? b->try_lock_for("stopped", 30s, stop.get_token(), table_)
                           : b->lock("stopped", stop.get_token(), table_);
    const auto took = clock_type::now() - stopper.started();
    EXPECT_FALSE(got);
    EXPECT_GE(took, 300ms) << "ended before the stop";
    EXPECT_LT(took, scaled(mysql() ? 2500ms : 1300ms)) << "the stop did not end the wait promptly";
  }
  std::stop_source stopped;
  stopped.request_stop();
  const auto start = clock_type::now();
  EXPECT_FALSE(b->lock("stopped", stopped.get_token(), table_));
  EXPECT_LT(clock_type::now() - start, scaled(1s)) << "a stop before the call waits not at all";
  b->exec(insert(2));
  a->commit();
  EXPECT_TRUE(b->lock("stopped", stopped.get_token(), table_)) << "one attempt, granted on a free row";
  auto c = connect();
  c->begin();
  EXPECT_FALSE(c->try_lock("stopped", table_)) << "b holds it now";
  c->rollback();
  b->commit();
  EXPECT_EQ(data_rows(), 2) << "the caller's writes before and after the stopped waits both committed";
}

// A wait that can be stopped but is not goes on across its attempts until the holder lets go.
TEST_P(RowLockAdapterTest, AStoppableWaitIsGrantedWhenTheHolderCommits) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("handed", table_);
  b->begin();
  const auto hold_for = mysql() ? 2500ms : 700ms;  // across more than two attempts
  std::thread holder([&] {
    std::this_thread::sleep_for(hold_for);
    a->commit();
  });
  std::stop_source never;
  const auto start = clock_type::now();
  const bool got = b->lock("handed", never.get_token(), table_);
  const auto took = clock_type::now() - start;
  holder.join();
  EXPECT_TRUE(got);
  EXPECT_GE(took, hold_for);
  b->exec(insert(1));
  b->commit();
  EXPECT_EQ(data_rows(), 1);
}

TEST_P(RowLockAdapterTest, AutocommitIsRefused) {
  auto a = connect();
  EXPECT_THROW(a->lock_in_autocommit("x", table_), invalid_argument);
}

TEST_P(RowLockAdapterTest, BadInputIsRefused) {
  auto a = connect();
  a->begin();
  EXPECT_THROW(a->lock("", table_), invalid_argument);
  EXPECT_THROW(a->lock(std::string(256, 'n'), table_), invalid_argument);
  EXPECT_THROW(a->lock("x", "bad-table"), invalid_argument);
  EXPECT_THROW(a->lock("x", ""), invalid_argument);
  EXPECT_THROW(a->lock("x", unique_name("never_migrated")), schema_error);
  a->exec(insert(1));  // still usable: the failed attempt rolled back to its savepoint (PostgreSQL)
  a->commit();
  EXPECT_EQ(data_rows(), 1);
}

TEST_P(RowLockAdapterTest, ADeadlockNamesTheVictimAndSaysRetry) {
  auto a = connect();
  auto b = connect();
  a->begin();
  b->begin();
  a->lock("left", table_);
  b->lock("right", table_);
  std::string a_error;
  std::thread t([&] {
    try {
      a->lock("right", table_);  // waits for b
    } catch (const backend_error& e) {
      a_error = e.what();
      // PostgreSQL: only the attempt's savepoint was rolled back, the transaction goes on.
      if (!mysql()) {
        EXPECT_NO_THROW(a->scalar("SELECT 1"));
      }
      a->rollback();  // the survivor waits for the victim's whole transaction to end
    }
  });
  std::this_thread::sleep_for(200ms);
  std::string b_error;
  try {
    b->lock("left", table_);  // closes the cycle
  } catch (const backend_error& e) {
    b_error = e.what();
    if (!mysql()) {
      EXPECT_NO_THROW(b->scalar("SELECT 1"));
    }
    b->rollback();
  }
  t.join();
  ASSERT_NE(a_error.empty(), b_error.empty()) << "exactly one victim; a: " << a_error << " b: " << b_error;
  const std::string& message = a_error.empty() ? b_error : a_error;
  EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
  EXPECT_NE(message.find("retry"), std::string::npos) << message;
  if (a_error.empty()) a->rollback();
  if (b_error.empty()) b->rollback();
}

TEST_P(RowLockAdapterTest, FourProcessesIncrementACounterWithoutLosingAnUpdate) {
  constexpr int kProcesses = 4;
  constexpr int kRounds = 50;
  sql(*db_, "INSERT INTO " + data_ + " (id, v) VALUES (1, 0)");
  process_group group;
  for (int p = 0; p < kProcesses; ++p) {
    group.spawn([&] {
      auto s = connect();  // the child's own application connection
      for (int i = 0; i < kRounds; ++i) {
        s->begin();
        s->lock("counter", table_);
        const auto v = std::stoll(s->scalar("SELECT v FROM " + data_ + " WHERE id = 1"));
        std::this_thread::sleep_for(200us);
        s->exec("UPDATE " + data_ + " SET v = " + std::to_string(v + 1) + " WHERE id = 1");
        s->commit();
      }
      return 0;
    });
  }
  EXPECT_EQ(group.wait_all(), kProcesses);
  EXPECT_EQ(sql(*db_, "SELECT v FROM " + data_ + " WHERE id = 1").rows.at(0).at(0),
            std::to_string(kProcesses * kRounds));
}

TEST_P(RowLockAdapterTest, ThreeProcessesTakeNeverSeenNamesInTurnWithoutDeadlock) {
  // The first lock of a name creates its row inside the caller's transaction; the others must
  // queue behind that insert, not share a lock and deadlock (MySQL's INSERT IGNORE trap).
  constexpr int kProcesses = 3;
  constexpr int kNames = 20;
  const std::string prefix = unique_name("fresh");
  process_group group;
  for (int p = 0; p < kProcesses; ++p) {
    group.spawn([&, p] {
      auto s = connect();
      for (int i = 0; i < kNames; ++i) {
        s->begin();
        s->lock(prefix + "_" + std::to_string(i), table_);
        s->exec("INSERT INTO " + data_ + " (id, v) VALUES (" + std::to_string(i * kProcesses + p) + ", 0)");
        std::this_thread::sleep_for(1ms);
        s->commit();
      }
      return 0;
    });
  }
  EXPECT_EQ(group.wait_all(), kProcesses) << "a process failed (deadlock?)";
  EXPECT_EQ(data_rows(), kProcesses * kNames);
}

INSTANTIATE_TEST_SUITE_P(Adapters, RowLockAdapterTest, ::testing::ValuesIn(adapter_targets()),
                         [](const auto& info) { return info.param.name; });

TEST(RowLockAdapterSqliteTest, SociSqliteSaysNotSupported) {
  const auto spec = detail::parse_uri(sqlite_uri());
  soci::session session(soci::sqlite3, spec.path);
  soci::transaction tx(session);
  EXPECT_THROW(lock_row(session, "x"), not_supported);
  EXPECT_THROW((void)try_lock_row(session, "x"), not_supported);
  EXPECT_THROW((void)try_lock_row_for(session, "x", 1s), not_supported);
}

}  // namespace
}  // namespace sqllock::test
