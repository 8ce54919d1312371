// The lease contract, written once and run for every leased kind (table_lock, multi_lock,
// semaphore, fair_lock, rw_lock) on every target (support/lock_kinds.hpp): renewal keeps a hold,
// an unrenewed hold ends at its local deadline and is signalled lost, an expired hold is taken
// over with a higher fence and cannot be released late, a forced release (the operator's
// `sqllock release --force`, the reaper's delete) is a loss the holder is told of, and a wait that
// gives up leaves nothing behind (a queue kind's place, a semaphore's slot); and, on PostgreSQL, a
// release the server refuses keeps the hold for another release.
#include <atomic>
#include <thread>

#include "contract/contract_fixture.hpp"
#include "sqllock/error.hpp"
#include "support/program.hpp"
#include "support/session_lock_fixture.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

class LeasedLockContract : public LockContractTest {
 protected:
  // A lease short enough to run out in a test and long enough for a grant (and the next attempt)
  // to come back within it on a slow machine.
  static std::chrono::milliseconds short_lease() { return scaled(300ms); }

  static lock_settings lease(std::chrono::milliseconds ttl, bool renewed) {
    lock_settings s;
    s.ttl = ttl;
    s.auto_renew = renewed;
    return s;
  }
};

// The renewal runs at a third of the lease and is back before its end: the hold outlives several
// leases, keeps its fence, and every other owner is refused meanwhile.
TEST_P(LeasedLockContract, RenewalKeepsAHoldPastSeveralLeases) {
  auto db1 = open();
  auto db2 = open();
  const auto name = fresh("renewed");
  const auto ttl = short_lease();
  auto a = make(db1, name, lease(ttl, true));
  auto b = make(db2, name);
  ASSERT_TRUE(a->try_lock());
  const auto fence = a->fence();
  const auto step = ttl * 7 / 10;
  for (int i = 0; i < 5; ++i) {  // 5 × 0.7 ttl = 3.5 ttl
    std::this_thread::sleep_for(step);
    EXPECT_FALSE(b->try_lock()) << "taken over after " << ((i + 1) * step).count() << " ms";
    EXPECT_TRUE(a->holds());
  }
  EXPECT_FALSE(a->lost_token().stop_requested());
  EXPECT_EQ(a->fence(), fence);
  a->release();
  EXPECT_TRUE(b->try_lock()) << "free once released";
  b->release();
}

// Without renewal the holder is told at its local deadline — the ttl from when the acquire was
// sent, less the clock-rate margin (1/20) — by itself, with no statement to wait for.
TEST_P(LeasedLockContract, WithoutRenewalAHoldIsLostAtItsLocalDeadlineJustBeforeItsTtl) {
  auto db = open();
  const auto ttl = short_lease();
  std::atomic<bool> lost{false};
  auto s = lease(ttl, false);
  s.on_lost = [&] { lost = true; };
  auto a = make(db, fresh("bounded"), s);
  const auto start = clock_type::now();
  ASSERT_TRUE(a->try_lock());
  const auto token = a->lost_token();
  EXPECT_TRUE(eventually([&] { return lost.load(); }, 2 * ttl)) << "not told within two ttls";
  EXPECT_GE(clock_type::now() - start, ttl - ttl / 20) << "told before its local deadline";
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(a->holds());
}

// Past its lease the hold is another owner's to take, with a higher fence; the late holder's
// release says not_held and leaves the new hold in place.
TEST_P(LeasedLockContract, AnExpiredHoldIsTakenOverWithAHigherFenceAndCannotBeReleasedLate) {
  auto db1 = open();
  auto db2 = open();
  auto observer = open();
  const auto name = fresh("lease");
  const auto ttl = short_lease();
  auto late = make(db1, name, lease(ttl, false));
  auto next = make(db2, name);
  ASSERT_TRUE(late->try_lock());
  const auto old_fence = late->fence();
  EXPECT_FALSE(next->try_lock());
  // From after the grant came back: past the lease by both clocks (they tick in milliseconds).
  std::this_thread::sleep_for(ttl + 100ms);
  EXPECT_FALSE(late->holds()) << "by the local clock the lease is over";
  ASSERT_TRUE(next->try_lock()) << "the expired hold was not taken over";
  EXPECT_GT(next->fence(), old_fence);
  EXPECT_THROW(late->release(), not_held);
  EXPECT_TRUE(next->holds());
  EXPECT_TRUE(kind().shown_held(observer, name)) << "the late release removed the new hold";
  next->release();
  EXPECT_FALSE(kind().shown_held(observer, name));
}

// The operator's forced release (or the reaper's delete) takes the hold's rows away: the holder's
// next renewal finds them gone and tells it (on_lost, lost_token()), its release says not_held,
// and the next grant's fence is higher.
TEST_P(LeasedLockContract, AForcedReleaseIsALossTheHolderIsToldOf) {
  auto db = open();
  auto admin = open();
  const auto name = fresh("forced");
  std::atomic<bool> lost{false};
  auto s = lease(short_lease(), true);
  s.on_lost = [&] { lost = true; };
  auto a = make(db, name, s);
  ASSERT_TRUE(a->try_lock());
  const auto fence = a->fence();
  const auto token = a->lost_token();
  EXPECT_FALSE(token.stop_requested());
  kind().force_release(admin, name);
  EXPECT_TRUE(eventually([&] { return lost.load(); }, scaled(2s)))
      << "no loss signal within " << scaled(2s).count() << " ms";
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(a->holds());
  EXPECT_THROW(a->release(), not_held);
  auto b = make(admin, name);
  ASSERT_TRUE(b->try_lock());
  EXPECT_GT(b->fence(), fence);
  b->release();
}

// A timed wait that gives up leaves nothing of its own: once the holder releases, a newcomer is
// granted at once (a place or slot left behind would stand ahead of it for its lease, renewed
// while the waiter's object lives).
TEST_P(LeasedLockContract, AWaitThatGivesUpLeavesNothingBehind) {
  auto db1 = open();
  auto db2 = open();
  auto db3 = open();
  const auto name = fresh("gave-up");
  auto a = make(db1, name);
  ASSERT_TRUE(a->try_lock());
  auto b = make(db2, name, lease(60s, true));
  EXPECT_FALSE(b->try_lock_for(200ms));
  EXPECT_FALSE(b->holds());
  a->release();
  auto c = make(db3, name);
  EXPECT_TRUE(c->try_lock()) << "the waiter that gave up left a place (or a row) behind";
  c->release();
  EXPECT_TRUE(b->try_lock()) << "and its object can still take the lock";
  b->release();
}

const auto leased_cases = with(&lock_capabilities::leased, every_target());
SQLLOCK_CONTRACT_CASES(AllTargets, LeasedLockContract, leased_cases);

// ---- on PostgreSQL, whose runtime role's rights are per table: a release the server refuses

class LeasedReleaseContract : public LeasedLockContract {};

// A release the server refuses — here because the runtime role lost its UPDATE and DELETE rights
// on the lock tables — changed nothing: the hold is still held, renewed and shown, and release()
// may be called again (the rule of release_level, core/lease/lease_release.hpp; a semaphore's
// permit was given up by such a failure, a multi_lock's set too).
TEST_P(LeasedReleaseContract, AReleaseTheServerRefusesKeepsTheHoldForAnotherRelease) {
  ASSERT_TRUE(where().least_privilege()) << "needs a runtime role distinct from the schema owner";
  auto db = open();
  auto owner = open_owner();
  auto observer = open();
  const auto name = fresh("refused");
  auto a = make(db, name);
  ASSERT_TRUE(a->try_lock());
  const auto fence = a->fence();
  const auto role = sql(db, "SELECT current_user").rows.at(0).at(0).value();
  const auto tables = table_ + ", " + table_ + "_permits, " + table_ + "_queue";
  sql(owner, "REVOKE UPDATE, DELETE ON " + tables + " FROM " + role);
  EXPECT_THROW(a->release(), permission_denied);
  sql(owner, "GRANT UPDATE, DELETE ON " + tables + " TO " + role);
  EXPECT_TRUE(a->holds()) << "a release that changed nothing gave the hold up";
  EXPECT_FALSE(a->lost_token().stop_requested());
  EXPECT_EQ(a->fence(), fence);
  EXPECT_TRUE(kind().shown_held(observer, name));
  EXPECT_FALSE(make(observer, name)->try_lock()) << "another owner got the lock while it was held";
  a->release();
  EXPECT_FALSE(a->holds());
  EXPECT_FALSE(kind().shown_held(observer, name));
}

const auto refused_release_cases = with(&lock_capabilities::leased, targets_of(dialect_kind::postgresql));
SQLLOCK_CONTRACT_CASES(PostgresqlTargets, LeasedReleaseContract, refused_release_cases);

}  // namespace
}  // namespace sqllock::test
