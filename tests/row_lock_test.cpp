// What only row locks (with_row_lock and friends) do, on every server driver × dialect pair: the
// transaction, its writes and its session setting, the rows table. The contract every lock kind
// shares, and not_supported on SQLite, are tested once for all kinds in tests/contract/.
#include <array>
#include <atomic>
#include <future>
#include <thread>

#include "sqllock/error.hpp"
#include "sqllock/row_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/stop_after.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// The pairs with row locks (servers), and the one without (SQLite).
std::vector<target> targets_where(bool row_locks) {
  std::vector<target> out;
  for (auto& t : all_targets())
    if ((t.dialect != dialect_kind::sqlite) == row_locks) out.push_back(t);
  return out;
}

class RowLockTest : public LockTableTest {
 protected:
  bool mysql() const { return GetParam().dialect == dialect_kind::mysql; }
  std::string rows_table() const { return table_ + "_rows"; }

  // A table of this test, for the functions' own writes (created by the owner: the runtime role
  // may not create tables).
  std::string make_data_table() {
    const std::string name = unique_name("data");
    sql(open_owner(), "CREATE TABLE " + name + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
    return name;
  }
  std::int64_t count(const database& db, const std::string& table) {
    return std::stoll(sql(db, "SELECT COUNT(*) FROM " + table).rows.at(0).at(0).value());
  }
};

// Holds the lock on `name` in another thread until release() is called.
class holder {
 public:
  holder(const database& db, std::string name) {
    thread_ = std::thread([this, db, name] {
      try {
        with_row_lock(db, name, [&](row_lock_tx&) {
          held_.set_value();
          release_.get_future().wait();
        });
      } catch (...) {
        try {
          held_.set_exception(std::current_exception());
        } catch (...) {
        }
      }
    });
    try {
      held_.get_future().get();
    } catch (...) {
      release();
      throw;
    }
  }
  void release() {
    if (!released_) release_.set_value();
    released_ = true;
    if (thread_.joinable()) thread_.join();
  }
  ~holder() { release(); }

 private:
  std::promise<void> held_;
  std::promise<void> release_;
  bool released_ = false;
  std::thread thread_;
};

TEST_P(RowLockTest, ServerDialectsSupportRowLocks) { EXPECT_TRUE(supports_row_locks(open())); }

TEST_P(RowLockTest, CommitKeepsTheFunctionsWritesAndReturnsItsValue) {
  auto db = open();
  const auto data = make_data_table();
  const int got = with_row_lock(db, "account", [&](row_lock_tx& tx) {
    EXPECT_EQ(tx.name(), "account");
    EXPECT_EQ(tx.dialect(), GetParam().dialect);
    EXPECT_EQ(tx.exec("INSERT INTO " + data + " (id, v) VALUES ($1, $2)", {std::int64_t{1}, std::int64_t{10}}).affected,
              1u);
    return 42;
  });
  EXPECT_EQ(got, 42);
  EXPECT_EQ(count(db, data), 1);
  EXPECT_EQ(rows(db), 0) << "row locks never touch the lock table";
  EXPECT_EQ(std::stoll(sql(db, "SELECT COUNT(*) FROM " + rows_table()).rows.at(0).at(0).value()), 1);
}

TEST_P(RowLockTest, AnExceptionRollsBackTheWritesAndReleasesTheLock) {
  auto db = open();
  const auto data = make_data_table();
  EXPECT_THROW(
      with_row_lock(db, "account",
                    [&](row_lock_tx& tx) {
                      tx.exec("INSERT INTO " + data + " (id, v) VALUES ($1, $2)", {std::int64_t{1}, std::int64_t{10}});
                      throw std::runtime_error("boom");
                    }),
      std::runtime_error);
  EXPECT_EQ(count(db, data), 0);
  auto other = open();
  EXPECT_TRUE(try_with_row_lock(other, "account", [](row_lock_tx&) {})) << "the rollback released the lock";
}

// Refusal without a wait, and other names: tests/contract/ (LockContract).
TEST_P(RowLockTest, TryReturnsTheFunctionsValueOnlyWhenItRan) {
  auto db = open();
  auto other = open();
  holder h(db, "busy");
  const std::optional<int> none = try_with_row_lock(other, "busy", [](row_lock_tx&) { return 1; });
  EXPECT_FALSE(none.has_value());
  h.release();
  EXPECT_EQ(try_with_row_lock(other, "busy", [](row_lock_tx&) { return 7; }), std::optional<int>(7));
}

// The lock wait setting of the connection the attempt used, read on that same connection.
struct session_probe {
  std::string id_query, setting_query, set_custom, custom_value;
};
session_probe probe_for(dialect_kind d) {
  if (d == dialect_kind::postgresql)
    return {"SELECT pg_backend_pid()", "SHOW lock_timeout", "SET lock_timeout = '7s'", "7s"};
  return {"SELECT CONNECTION_ID()", "SELECT @@SESSION.innodb_lock_wait_timeout",
          "SET SESSION innodb_lock_wait_timeout = 7", "7"};
}

TEST_P(RowLockTest, TimedWaitGivesUpAfterTheTimeoutAndRestoresTheSessionSetting) {
  // The test reads one server session's setting before and after; a transaction-mode pooler
  // lends each statement any server session (PostgreSQL's setting is transaction-local anyway).
  if (GetParam().transaction_pooler) GTEST_SKIP() << "no session of its own behind a transaction-mode pooler";
  database_options o;
  o.table = table_;
  o.pool_size = 1;  // sequential calls reuse the one idle connection, so its setting can be read
  database db(GetParam().uri, o);
  const auto p = probe_for(GetParam().dialect);
  const auto id = sql(db, p.id_query).rows.at(0).at(0);
  sql(db, p.set_custom);
  auto other = open();
  holder h(other, "slow");

  const auto timeout = 300ms;
  const auto start = clock_type::now();
  EXPECT_FALSE(try_with_row_lock_for(db, "slow", timeout, [](row_lock_tx&) {}));
  const auto waited = clock_type::now() - start;
  EXPECT_GE(waited, mysql() ? 1s : timeout) << "MySQL waits whole seconds";
  EXPECT_LT(waited, mysql() ? 3s : 2s);
  ASSERT_EQ(sql(db, p.id_query).rows.at(0).at(0), id) << "the test reads the connection the attempt used";
  EXPECT_EQ(sql(db, p.setting_query).rows.at(0).at(0), p.custom_value) << "setting restored after a timeout";

  h.release();
  EXPECT_TRUE(try_with_row_lock_for(db, "slow", 2s, [&](row_lock_tx& tx) {
    EXPECT_EQ(tx.exec(p.setting_query).rows.at(0).at(0), p.custom_value) << "the function runs with the own setting";
  }));
  ASSERT_EQ(sql(db, p.id_query).rows.at(0).at(0), id);
  EXPECT_EQ(sql(db, p.setting_query).rows.at(0).at(0), p.custom_value) << "setting restored after success";
  // A zero timeout is a NOWAIT attempt.
  EXPECT_TRUE(try_with_row_lock_for(db, "slow", 0ms, [](row_lock_tx&) {}));
}

// try_with_row_lock_until: the same wait, to a deadline of any clock; one already past waits not at all.
TEST_P(RowLockTest, TimedWaitToADeadlineGivesUpThenAndRunsTheFunctionWhenFree) {
  auto db = open();
  auto other = open();
  holder h(other, "until");
  const auto start = clock_type::now();
  EXPECT_FALSE(try_with_row_lock_until(db, "until", std::chrono::system_clock::now() + 300ms,
                                       [](row_lock_tx&) { ADD_FAILURE() << "must not run"; }));
  const auto waited = clock_type::now() - start;
  EXPECT_GE(waited, mysql() ? 900ms : 290ms) << "MySQL waits whole seconds (less the conversion of the deadline)";
  EXPECT_LT(waited, mysql() ? 3s : 2s);
  const auto past = clock_type::now();
  EXPECT_FALSE(try_with_row_lock_until(db, "until", past - 1s, [](row_lock_tx&) { ADD_FAILURE() << "must not run"; }));
  EXPECT_LT(clock_type::now() - past, 1s) << "a past deadline does not wait";
  h.release();
  EXPECT_EQ(try_with_row_lock_until(db, "until", clock_type::now() + 2s, [](row_lock_tx&) { return 5; }),
            std::optional<int>(5));
}

// A stop ends the wait of with_row_lock(db, name, stop, body) and try_with_row_lock_for(…, stop, …):
// the waiting FOR UPDATE is cancelled on the server, body does not run, and the connection and
// the name work on. A stop before the call leaves one attempt without waiting.
TEST_P(RowLockTest, AStopEndsTheWaitWithoutRunningTheFunction) {
  auto db = open();
  auto other = open();
  holder h(other, "stopped");
  for (const bool timed : {false, true}) {
    SCOPED_TRACE(timed ? "try_with_row_lock_for(30 s, stop, …)" : "with_row_lock(stop, …)");
    std::stop_source stop;
    const stop_after stopper(stop, 300ms);
    const auto body = [](row_lock_tx&) {
      ADD_FAILURE() << "must not run";
      return 1;
    };
    const auto got = timed ? try_with_row_lock_for(db, "stopped", 30s, stop.get_token(), body)
                           : with_row_lock(db, "stopped", stop.get_token(), body);
    const auto took = clock_type::now() - stopper.started();
    EXPECT_EQ(got, std::nullopt);
    EXPECT_GE(took, 300ms) << "ended before the stop";
    EXPECT_LT(took, scaled(1300ms)) << "the stop did not end the wait promptly";
  }
  std::stop_source stopped;
  stopped.request_stop();
  const auto start = clock_type::now();
  EXPECT_FALSE(with_row_lock(db, "stopped", stopped.get_token(), [](row_lock_tx&) {}));
  EXPECT_LT(clock_type::now() - start, scaled(1s)) << "a stop before the call waits not at all";
  h.release();
  EXPECT_TRUE(with_row_lock(db, "stopped", stopped.get_token(), [](row_lock_tx&) {}))
      << "a stop before the call leaves one attempt, granted on a free lock";
  EXPECT_EQ(with_row_lock(db, "stopped", [](row_lock_tx&) { return 7; }), 7);
}

TEST_P(RowLockTest, OneRowPerNameIsKeptAndNeverDeleted) {
  auto db = open();
  for (const char* name : {"a", "b", "a", "A", "a "}) with_row_lock(db, name, [](row_lock_tx&) {});
  EXPECT_EQ(std::stoll(sql(db, "SELECT COUNT(*) FROM " + rows_table()).rows.at(0).at(0).value()), 4)
      << "names are exact: 'a', 'A' and 'a ' differ";
  EXPECT_EQ(rows(db), 0);
}

TEST_P(RowLockTest, RelockingANameTheThreadHoldsIsRefused) {
  auto db = open();
  const auto data = make_data_table();
  with_row_lock(db, "outer", [&](row_lock_tx& tx) {
    tx.exec("INSERT INTO " + data + " (id, v) VALUES ($1, $2)", {std::int64_t{1}, std::int64_t{1}});
    EXPECT_THROW(with_row_lock(db, "outer", [](row_lock_tx&) {}), invalid_argument);
    EXPECT_THROW((void)try_with_row_lock(db, "outer", [](row_lock_tx&) {}), invalid_argument);
    EXPECT_TRUE(try_with_row_lock(db, "inner", [](row_lock_tx&) {})) << "another name is fine";
  });
  EXPECT_EQ(count(db, data), 1) << "the outer transaction still committed";
  with_row_lock(db, "outer", [](row_lock_tx&) {});  // and the name is free again
}

TEST_P(RowLockTest, AFailedStatementKeepsTheTransactionFromCommittingOnPostgres) {
  auto db = open();
  const auto data = make_data_table();
  const auto body = [&](row_lock_tx& tx) {
    tx.exec("INSERT INTO " + data + " (id, v) VALUES ($1, $2)", {std::int64_t{1}, std::int64_t{1}});
    EXPECT_THROW(tx.exec("SELECT * FROM no_such_table_here"), backend_error);
  };
  if (mysql()) {
    // MySQL rolls back only the failed statement; the transaction goes on and commits.
    with_row_lock(db, "f", body);
    EXPECT_EQ(count(db, data), 1);
  } else {
    // PostgreSQL aborted the transaction; COMMIT would quietly roll back, so sqllock throws.
    EXPECT_THROW(with_row_lock(db, "f", body), backend_error);
    EXPECT_EQ(count(db, data), 0);
  }
  EXPECT_TRUE(try_with_row_lock(open(), "f", [](row_lock_tx&) {}));
}

TEST_P(RowLockTest, ParametersBindNullIntegersAndTextAndRepeat) {
  auto db = open();
  with_row_lock(db, "p", [&](row_lock_tx& tx) {
    const auto r = tx.exec("SELECT $1, $2, $3, $2", {sql_value{}, std::int64_t{-5}, std::string("it's")});
    ASSERT_EQ(r.rows.size(), 1u);
    EXPECT_EQ(r.rows[0][0], std::nullopt);
    EXPECT_EQ(r.rows[0][1], "-5");
    EXPECT_EQ(r.rows[0][2], "it's");
    EXPECT_EQ(r.rows[0][3], "-5");
    EXPECT_THROW(tx.exec("SELECT $1, $2", {std::int64_t{1}}), invalid_argument);
  });
}

TEST_P(RowLockTest, WithoutMigrationTwoTheErrorSaysMigrate) {
  database_options o;
  o.table = unique_name("nomig");
  database db(GetParam().uri, o);
  try {
    with_row_lock(db, "x", [](row_lock_tx&) {});
    FAIL() << "locked without a row table";
  } catch (const schema_error& e) {
    EXPECT_NE(std::string(e.what()).find("migrate"), std::string::npos) << e.what();
  }
}

TEST_P(RowLockTest, TwoHandlesLockManyNeverSeenNamesAtOnceWithoutDeadlock) {
  constexpr int kNames = 20;
  const std::string prefix = unique_name("fresh");
  std::atomic<int> errors{0};
  std::array<std::atomic<int>, kNames> inside{};
  std::atomic<int> overlaps{0};
  std::atomic<int> ready{0};
  const auto worker = [&] {
    auto db = open();
    ready++;
    while (ready.load() < 2) std::this_thread::yield();
    for (int i = 0; i < kNames; ++i) {
      try {
        with_row_lock(db, prefix + std::to_string(i), [&](row_lock_tx&) {
          if (++inside[i] > 1) overlaps++;
          std::this_thread::sleep_for(2ms);
          --inside[i];
        });
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        errors++;
      }
    }
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(overlaps.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(ServerTargets, RowLockTest, ::testing::ValuesIn(targets_where(true)),
                         [](const auto& info) { return info.param.name; });
// The same contracts through PgBouncer in transaction mode (?prepare=off), on both PostgreSQL
// drivers: statement-sized locks work behind a transaction-mode pooler.
INSTANTIATE_TEST_SUITE_P(Pgbouncer, RowLockTest, ::testing::ValuesIn(pgbouncer_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
