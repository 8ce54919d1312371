// The SQL guard (migration 6; docs/design.md, "Guarded writes"): what any client language calls in
// its own transaction, given only the lock's name and fence. PostgreSQL and MySQL/MariaDB:
// SELECT <table>_guard(name, fence), which raises SQLSTATE 45L01 when the lease is gone. SQLite,
// which has no server functions: the one-statement form UPDATE … SET fence = fence … RETURNING
// fence, which returns a row only while the lease is held. For every leased kind on every target
// (PgBouncer in transaction mode included), through each target's client library with bound
// parameters, as an application would: a guarded write commits while held; after a forced release
// the guard refuses and the write is rolled back; another owner's attempt on the expired lease
// waits for the guarded transaction, and — the control — gets in while an unguarded one is open.
#include <thread>

#include "common/sql_text.hpp"
#include "support/guard_fixture.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

// The SQLSTATE the SQL guard raises (MySQL/MariaDB: with error 1644, ER_SIGNAL_EXCEPTION).
constexpr const char* kGuardSqlstate = "45L01";

class GuardSqlTest : public GuardFixture {
 protected:
  // The guard a client writes for this kind (README, "Safe writes under a lock"), in the
  // placeholder syntax of `client`'s library.
  std::string guard_statement(const app_session& client) const {
    const auto name = client.placeholder(1), fence = client.placeholder(2);
    if (where().dialect != dialect_kind::sqlite)
      return "SELECT " + detail::expand_table_template("{{table_guard}}", where().dialect, table_) + "(" + name + ", " +
             fence + ")";
    // SQLite: the lease table of the kind, and its fence column.
    const bool queued = kind().name == "fair_lock" || kind().name == "rw_lock";
    const std::string t = kind().name == "semaphore" ? table_ + "_permits" : queued ? table_ + "_queue" : table_;
    const std::string f = queued ? "ticket" : "fence";
    return "UPDATE " + t + " SET " + f + " = " + f + " WHERE resource = " + name + " AND " + f + " = " + fence +
           " AND expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now') RETURNING " + f;
  }
  // Every (name, fence) the lock holds now: one, or two for the multi_lock {name, companion}.
  std::vector<std::pair<std::string, std::int64_t>> held_rows(const lock_object& lock) const {
    std::vector<std::pair<std::string, std::int64_t>> out{{lock.name(), lock.fence()}};
    if (kind().name == "multi_lock") {
      const auto companion = companion_name(lock.name());
      const auto r = sql(open(), "SELECT fence FROM " + table_ + " WHERE resource = $1", {companion});
      out.emplace_back(companion, std::stoll(r.rows.at(0).at(0).value()));
    }
    return out;
  }

  // Guards every row of `rows` in app's open transaction; each must pass.
  void guard_all(app_session& a, const std::vector<std::pair<std::string, std::int64_t>>& rows) {
    for (const auto& [name, fence] : rows) {
      const auto g = a.query(guard_statement(a), name, fence);
      EXPECT_TRUE(g.row) << name << " fence " << fence << ": " << g.error;
      if (g.row) {
        EXPECT_EQ(g.first, fence) << "returns the fence";
      }
    }
  }
};

TEST_P(GuardSqlTest, AGuardedWriteCommitsWhileTheLockIsHeld) {
  auto db = open();
  auto lock = make(db, fresh("guarded"));
  lock->lock();
  auto tx = app();
  tx->begin();
  guard_all(*tx, held_rows(*lock));
  tx->exec(insert(1));
  guard_all(*tx, held_rows(*lock));  // a second guard in the same transaction passes too
  tx->exec(insert(2));
  tx->commit();
  lock->release();
  EXPECT_EQ(data_rows(), 2);
  if (kind().can.shared) {  // a reader's hold is guarded the same way
    lock->lock_shared();
    tx->begin();
    guard_all(*tx, held_rows(*lock));
    tx->exec(insert(3));
    tx->commit();
    lock->release_shared();
    EXPECT_EQ(data_rows(), 3);
  }
}

TEST_P(GuardSqlTest, AGuardOfAForcedReleasedHoldRefusesAndTheWriteIsRolledBack) {
  auto db = open();
  const auto name = fresh("forced");
  auto lock = make(db, name);
  lock->lock();
  const auto rows = held_rows(*lock);
  kind().force_release(open_owner(), name);
  auto tx = app();
  tx->begin();
  tx->exec(insert(1));
  const auto g = tx->query(guard_statement(*tx), rows.front().first, rows.front().second);
  EXPECT_FALSE(g.row) << "the guard passed although the hold was released by force";
  if (where().dialect != dialect_kind::sqlite) {
    if (!g.sqlstate.empty() || where().dialect == dialect_kind::postgresql) {
      EXPECT_EQ(g.sqlstate, kGuardSqlstate) << g.error;
    }
    if (where().dialect == dialect_kind::mysql) {
      EXPECT_EQ(g.vendor_code, 1644) << g.error;  // ER_SIGNAL_EXCEPTION
    }
    EXPECT_NE(g.error.find("sqllock: lock no longer held, roll the transaction back"), std::string::npos) << g.error;
    EXPECT_NE(g.error.find("fence " + std::to_string(rows.front().second)), std::string::npos) << g.error;
  }
  tx->rollback();  // what the script does on the error (SQLite: on no row)
  EXPECT_EQ(data_rows(), 0);
  lock->unlock();
}

// The lease ran out by the database clock and nobody took the lock: the row is still there, with
// this fence, and the guard refuses it all the same.
TEST_P(GuardSqlTest, AGuardOfAnExpiredLeaseRefuses) {
  auto db = open();
  auto lock = make(db, fresh("expired"), lease(scaled(500ms), false));
  ASSERT_TRUE(lock->try_lock());
  const auto [name, fence] = held_rows(*lock).front();
  std::this_thread::sleep_for(scaled(700ms));
  auto tx = app();
  tx->begin();
  const auto g = tx->query(guard_statement(*tx), name, fence);
  EXPECT_FALSE(g.row) << "the guard passed on an expired lease";
  tx->rollback();
  lock->unlock();
}

TEST_P(GuardSqlTest, AGuardOfAnotherFenceOrNameRefuses) {
  auto db = open();
  auto lock = make(db, fresh("other"));
  lock->lock();
  const auto [name, fence] = held_rows(*lock).front();
  auto tx = app();
  tx->begin();
  EXPECT_FALSE(tx->query(guard_statement(*tx), name, fence + 1000).row) << "a fence the hold does not have";
  if (where().dialect != dialect_kind::postgresql) {  // PostgreSQL: the error ended the transaction
    EXPECT_FALSE(tx->query(guard_statement(*tx), name + "x", fence).row) << "another name";
    EXPECT_TRUE(tx->query(guard_statement(*tx), name, fence).row) << "the hold itself";
  }
  tx->rollback();
  lock->release();
}

TEST_P(GuardSqlTest, ATakeoverWaitsUntilTheGuardedTransactionCommits) {
  expect_held_back(take_over_during([this](app_session& tx, const lock_object& a) { guard_all(tx, held_rows(a)); }));
}

// The control: without the guard the other owner is granted while the writing transaction is
// still open, and that write then commits after another's grant.
TEST_P(GuardSqlTest, WithoutAGuardATakeoverIsGrantedWhileTheTransactionIsOpen) { expect_let_in(take_over_during({})); }

SQLLOCK_CONTRACT_CASES(Leased, GuardSqlTest, with(&lock_capabilities::leased, every_target()));

}  // namespace
}  // namespace sqllock::test
