// Guarded writes (sqllock/lease_claim.hpp): guard() in an application's own transaction, through
// the adapter of each target's client library, for every leased kind (table_lock, multi_lock,
// semaphore, fair_lock, rw_lock) on every target, PgBouncer in transaction mode included. The
// guarantee under test: a write committed after a successful guard is ordered before the next
// holder's grant — a takeover of an expired lease waits for the guarded transaction — and a guard
// of a hold that is gone throws lock_lost. The control: the same transaction unguarded lets the
// takeover through while it is open.
#include <sys/mman.h>

#include <atomic>
#include <new>
#include <thread>
#include <utility>

#include "contract/contract_fixture.hpp"
#include "sqllock/error.hpp"
#include "support/app_sessions.hpp"
#include "support/processes.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

class GuardTest : public LockContractTest {
 protected:
  void SetUp() override {
    LockContractTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    data_ = unique_name("data");
    sql(open_owner(), "CREATE TABLE " + data_ + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
  }

  // A new application connection to the target's database, through its client library's adapter.
  std::unique_ptr<app_session> app() const { return connect_app(where().name, where().uri); }

  std::string insert(int id) const {
    return "INSERT INTO " + data_ + " (id, v) VALUES (" + std::to_string(id) + ", 0)";
  }
  std::int64_t data_rows(const database& db) const {
    return std::stoll(sql(db, "SELECT COUNT(*) FROM " + data_).rows.at(0).at(0).value());
  }

  static lock_settings lease(std::chrono::milliseconds ttl, bool renewed) {
    lock_settings s;
    s.ttl = ttl;
    s.auto_renew = renewed;
    return s;
  }

  // What happened to another owner's attempt made once a's lease had run out, while a's
  // transaction stayed open (guarded or not) for a while: whether it was granted before the commit,
  // and whether and when at all.
  struct takeover {
    bool before_commit = false;
    bool granted = false;
    clock_type::time_point granted_at{};
    clock_type::time_point committed_at{};
    std::string error;
  };
  takeover take_over_during(bool guarded) {
    auto db1 = open();
    auto db2 = open();
    const auto name = fresh("takeover");
    const auto ttl = scaled(600ms);
    auto a = make(db1, name, lease(ttl, false));
    auto b = make(db2, name);
    EXPECT_TRUE(a->try_lock());
    auto tx = app();
    tx->begin();
    if (guarded) tx->guard(a->claim());
    std::this_thread::sleep_for(ttl + scaled(200ms));  // a's lease ran out, by every clock
    takeover out;
    std::atomic<bool> granted{false};
    std::thread contender([&] {
      try {
        if (b->try_lock_for(scaled(20s))) {
          out.granted_at = clock_type::now();
          granted = true;
          b->release();  // by the thread that holds it
        }
      } catch (const std::exception& e) {
        out.error = e.what();
      }
    });
    std::this_thread::sleep_for(scaled(1s));  // a grant takes a few milliseconds once possible
    out.before_commit = granted.load();
    tx->exec(insert(1));
    out.committed_at = clock_type::now();
    tx->commit();
    contender.join();
    out.granted = granted.load();
    EXPECT_THROW(a->release(), not_held) << "a's lease ran out";
    return out;
  }

  // Three processes, each with its own handle and application connection, increment one counter
  // by read-modify-write in a transaction of their own under the lock (a lease of 400 ms, not
  // renewed), guarded or not; in every third round a process pauses past its lease between the
  // read and the write, as a GC pause or a SIGSTOP would. Returns the increments committed and the
  // counter's final value: equal when no update was lost.
  std::pair<std::int64_t, std::int64_t> paused_increments(bool guarded) {
    constexpr int kProcesses = 3;
    constexpr int kRounds = 6;
    const auto ttl = scaled(400ms);
    const auto owner = open_owner();
    sql(owner, "INSERT INTO " + data_ + " (id, v) VALUES (1, 0)");
    void* shared = ::mmap(nullptr, sizeof(std::atomic<std::int64_t>), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) throw std::runtime_error("mmap failed");
    auto* committed = new (shared) std::atomic<std::int64_t>(0);
    const auto name = fresh("counter");
    process_group group;
    for (int p = 0; p < kProcesses; ++p) {
      group.spawn([&, p] {
        auto db = open();
        auto settings = lease(ttl, false);
        settings.on_unlock_error = [](const std::exception&) {};  // a paused hold's release finds it lost
        auto lock = make(db, name, settings);
        auto tx = app();
        for (int i = 0; i < kRounds; ++i) {
          lock->lock();
          tx->begin();
          try {
            if (guarded) tx->guard(lock->claim());
            const auto v = std::stoll(tx->scalar("SELECT v FROM " + data_ + " WHERE id = 1"));
            if ((i + p) % 3 == 0) std::this_thread::sleep_for(ttl + scaled(200ms));  // paused past the lease
            tx->exec("UPDATE " + data_ + " SET v = " + std::to_string(v + 1) + " WHERE id = 1");
            tx->commit();
            ++*committed;
          } catch (const lock_lost&) {
            tx->rollback();  // the guard found the lease gone before the read: nothing written
          }
          lock->unlock();
        }
        return 0;
      });
    }
    group.start();
    EXPECT_EQ(group.wait_all(), kProcesses);
    const std::pair<std::int64_t, std::int64_t> out{
        committed->load(), std::stoll(sql(owner, "SELECT v FROM " + data_ + " WHERE id = 1").rows.at(0).at(0).value())};
    ::munmap(shared, sizeof(std::atomic<std::int64_t>));
    return out;
  }

  std::string data_;
};

TEST_P(GuardTest, AGuardedWriteCommitsWhileTheLockIsHeld) {
  auto db = open();
  auto lock = make(db, fresh("guarded"));
  lock->lock();
  auto tx = app();
  tx->begin();
  tx->guard(lock->claim());
  tx->exec(insert(1));
  tx->guard(lock->claim());  // a second guard in the same transaction holds too
  tx->exec(insert(2));
  tx->commit();
  lock->release();
  EXPECT_EQ(data_rows(db), 2);
  if (kind().can.shared) {  // a reader's hold is guarded the same way
    lock->lock_shared();
    tx->begin();
    tx->guard(lock->claim());
    tx->exec(insert(3));
    tx->commit();
    lock->release_shared();
    EXPECT_EQ(data_rows(db), 3);
  }
}

TEST_P(GuardTest, AGuardOfAForcedReleasedHoldThrowsLockLost) {
  auto db = open();
  const auto name = fresh("forced");
  auto lock = make(db, name);
  lock->lock();
  const auto claim = lock->claim();  // taken while held: the database decides
  kind().force_release(open_owner(), name);
  auto tx = app();
  tx->begin();
  tx->exec(insert(1));
  try {
    tx->guard(claim);
    ADD_FAILURE() << "the guard passed although the hold was released by force";
  } catch (const lock_lost& e) {
    EXPECT_NE(std::string(e.what()).find("Roll the transaction back"), std::string::npos) << e.what();
  }
  tx->rollback();
  EXPECT_EQ(data_rows(db), 0);
  lock->unlock();
}

TEST_P(GuardTest, ATakeoverWaitsUntilTheGuardedTransactionCommits) {
  const auto t = take_over_during(true);
  EXPECT_EQ(t.error, "");
  EXPECT_FALSE(t.before_commit) << "granted while the guarded transaction was open";
  ASSERT_TRUE(t.granted) << "never granted after the commit";
  EXPECT_GE(t.granted_at, t.committed_at);
}

// The control: without the guard, nothing holds the expired lease, and the other owner is granted
// while the writing transaction is still open — the write then commits after another's grant.
TEST_P(GuardTest, WithoutAGuardATakeoverIsGrantedWhileTheTransactionIsOpen) {
  const auto t = take_over_during(false);
  EXPECT_EQ(t.error, "");
  EXPECT_TRUE(t.before_commit);
}

TEST_P(GuardTest, AGuardOutsideATransactionIsRefused) {
  auto db = open();
  auto lock = make(db, fresh("autocommit"));
  lock->lock();
  auto tx = app();
  EXPECT_THROW(tx->guard(lock->claim()), invalid_argument);
  lock->release();
}

TEST_P(GuardTest, AClaimNeedsAHoldWhoseLeaseHasNotRunOut) {
  auto db = open();
  auto lock = make(db, fresh("claim"), lease(scaled(500ms), false));
  EXPECT_THROW(lock->claim(), not_held);
  ASSERT_TRUE(lock->try_lock());
  EXPECT_NO_THROW(lock->claim());
  std::this_thread::sleep_for(scaled(700ms));
  EXPECT_THROW(lock->claim(), lock_lost) << "the lease ran out by the local clock";
  lock->unlock();
}

TEST_P(GuardTest, ProcessesPausedPastTheirLeaseLoseNoUpdateWhenTheyGuard) {
  const auto [committed, value] = paused_increments(true);
  EXPECT_EQ(value, committed) << "an increment committed after another holder's grant was lost";
  EXPECT_GT(committed, 0);
}

SQLLOCK_CONTRACT_CASES(Leased, GuardTest, with(&lock_capabilities::leased, every_target()));

// The control of the process test, on the server targets with table_lock: unguarded, a paused
// holder's write lands after the next holder's and an update is lost. (SQLite needs no control
// here and has none: a transaction that read before another writer committed cannot write at all
// there, SQLITE_BUSY_SNAPSHOT.)
class GuardControlTest : public GuardTest {};

TEST_P(GuardControlTest, ProcessesPausedPastTheirLeaseLoseUpdatesWithoutAGuard) {
  const auto [committed, value] = paused_increments(false);
  EXPECT_LT(value, committed) << "no update was lost: the control shows nothing";
}

std::vector<lock_case> control_cases() {
  auto out = lock_cases(every_target(), [](const lock_kind& k) { return k.name == "table_lock"; });
  std::erase_if(out, [](const lock_case& c) { return c.where.dialect == dialect_kind::sqlite; });
  return out;
}

SQLLOCK_CONTRACT_CASES(Unguarded, GuardControlTest, control_cases());

}  // namespace
}  // namespace sqllock::test
