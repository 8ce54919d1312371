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

#include "support/guard_fixture.hpp"
#include "support/processes.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

class GuardTest : public GuardFixture {
 protected:
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
  EXPECT_EQ(data_rows(), 2);
  if (kind().can.shared) {  // a reader's hold is guarded the same way
    lock->lock_shared();
    tx->begin();
    tx->guard(lock->claim());
    tx->exec(insert(3));
    tx->commit();
    lock->release_shared();
    EXPECT_EQ(data_rows(), 3);
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
  EXPECT_EQ(data_rows(), 0);
  lock->unlock();
}

TEST_P(GuardTest, ATakeoverWaitsUntilTheGuardedTransactionCommits) {
  expect_held_back(take_over_during([](app_session& tx, const lock_object& a) { tx.guard(a.claim()); }));
}

// The control: without the guard, nothing holds the expired lease, and the other owner is granted
// while the writing transaction is still open — the write then commits after another's grant.
TEST_P(GuardTest, WithoutAGuardATakeoverIsGrantedWhileTheTransactionIsOpen) { expect_let_in(take_over_during({})); }

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

SQLLOCK_CONTRACT_CASES(Leased, GuardTest, with(&lock_capabilities::leased, every_target()));

// The process test runs table_lock on every target, through each adapter: the fault harness does
// the same with every leased kind on every database under its nemesis (fault/guarded_write.hpp,
// docs/reliability.md), so here it checks the adapters' paths with real processes.
class GuardProcessTest : public GuardTest {};

TEST_P(GuardProcessTest, ProcessesPausedPastTheirLeaseLoseNoUpdateWhenTheyGuard) {
  const auto [committed, value] = paused_increments(true);
  EXPECT_EQ(value, committed) << "an increment committed after another holder's grant was lost";
  EXPECT_GT(committed, 0);
}

std::vector<lock_case> table_lock_cases() {
  return lock_cases(every_target(), [](const lock_kind& k) { return k.name == "table_lock"; });
}

SQLLOCK_CONTRACT_CASES(TableLock, GuardProcessTest, table_lock_cases());

// The control of the process test, on the server targets: unguarded, a paused holder's write
// lands after the next holder's and an update is lost. (SQLite needs no control here and has
// none: a transaction that read before another writer committed cannot write at all there,
// SQLITE_BUSY_SNAPSHOT.)
class GuardControlTest : public GuardTest {};

TEST_P(GuardControlTest, ProcessesPausedPastTheirLeaseLoseUpdatesWithoutAGuard) {
  const auto [committed, value] = paused_increments(false);
  EXPECT_LT(value, committed) << "no update was lost: the control shows nothing";
}

std::vector<lock_case> control_cases() {
  auto out = table_lock_cases();
  std::erase_if(out, [](const lock_case& c) { return c.where.dialect == dialect_kind::sqlite; });
  return out;
}

SQLLOCK_CONTRACT_CASES(Unguarded, GuardControlTest, control_cases());

}  // namespace
}  // namespace sqllock::test
