// The lock contract, written once and run for every lock kind on every target that has it
// (support/lock_kinds.hpp): table_lock on all driver × dialect pairs and through PgBouncer,
// advisory_lock and the transaction-level advisory lock on PostgreSQL, named_lock on MySQL and
// MariaDB, row locks on both servers and through PgBouncer. Each suite is instantiated over the
// kinds whose capabilities it needs; what only one kind does is tested in that kind's own file.
#include <atomic>
#include <stop_token>
#include <thread>

#include "contract/contract_fixture.hpp"
#include "sqllock/error.hpp"
#include "support/bad_input.hpp"
#include "support/program.hpp"
#include "support/session_lock_fixture.hpp"
#include "support/stop_after.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// ---- every kind

class LockContract : public LockContractTest {
 protected:
  // How long a timed wait of `timeout` may take at most, and at least.
  std::chrono::milliseconds longest_wait(std::chrono::milliseconds timeout) const {
    return scaled(std::max(timeout, kind().can.wait_granularity) + kind().can.wait_overshoot);
  }
  std::chrono::milliseconds shortest_wait(std::chrono::milliseconds timeout) const {
    return std::max(timeout, kind().can.wait_granularity);
  }
};

TEST_P(LockContract, AnotherOwnerIsRefusedUntilTheHolderReleases) {
  auto db1 = open();
  auto db2 = open();
  const auto name = fresh("shared");
  auto held = kind().take(db1, name, std::monostate{});
  ASSERT_TRUE(held);
  EXPECT_TRUE(kind().shown_held(db2, name)) << "the server shows the lock held";
  auto start = clock_type::now();
  EXPECT_FALSE(kind().take(db2, name, std::monostate{})) << "another owner is refused";
  EXPECT_LT(clock_type::now() - start, scaled(1s)) << "an attempt without a wait does not wait";
  start = clock_type::now();
  EXPECT_FALSE(kind().take(db2, name, 150ms));
  EXPECT_GE(clock_type::now() - start, shortest_wait(150ms)) << "a timed attempt waits its time";
  EXPECT_TRUE(kind().take(db2, fresh("other"), std::monostate{})) << "other names are independent";
  held.reset();
  EXPECT_FALSE(kind().shown_held(db2, name)) << "released";
  auto next = kind().take(db2, name, std::monostate{});
  EXPECT_TRUE(next) << "free once released";
  EXPECT_FALSE(kind().take(db1, name, std::monostate{})) << "and now the first owner is refused";
}

TEST_P(LockContract, ATimedWaitGivesUpAtItsDeadline) {
  auto db1 = open();
  auto db2 = open();
  const auto name = fresh("busy");
  auto held = kind().take(db1, name, std::monostate{});
  ASSERT_TRUE(held);
  auto start = clock_type::now();
  EXPECT_FALSE(kind().take(db2, name, 300ms));
  auto took = clock_type::now() - start;
  EXPECT_GE(took, shortest_wait(300ms));
  EXPECT_LT(took, longest_wait(300ms));
  if (!kind().can.object) return;  // the scoped kinds take durations only
  auto waiter = make(db2, name);
  start = clock_type::now();
  EXPECT_FALSE(waiter->try_lock_until(std::chrono::system_clock::now() + 120ms));
  took = clock_type::now() - start;
  EXPECT_GE(took, 110ms);
  EXPECT_LT(took, longest_wait(120ms));
  EXPECT_FALSE(waiter->holds());
}

// The waiter under test runs `body` once it holds the lock, through run() (and, for object kinds,
// also as a lock object, whose holds() must then be true).
TEST_P(LockContract, AWaiterGetsTheLockWhenTheHolderReleases) {
  auto db1 = open();
  auto db2 = open();
  const auto name = fresh("handoff");
  for (const lock_wait wait : {lock_wait(5000ms), lock_wait(wait_forever{})}) {
    SCOPED_TRACE(std::holds_alternative<wait_forever>(wait) ? "without a deadline" : "with a 5 s deadline");
    auto held = kind().take(db1, name, std::monostate{});
    ASSERT_TRUE(held);
    std::atomic<bool> released{false};
    const auto start = clock_type::now();  // before the releaser starts its 200 ms
    std::thread releaser([&] {
      std::this_thread::sleep_for(200ms);
      released = true;
      held.reset();
    });
    bool ran = false;
    EXPECT_TRUE(kind().run(db2, name, wait, [&](lock_section&) {
      ran = true;
      EXPECT_TRUE(released.load()) << "got the lock while it was held";
    }));
    const auto took = clock_type::now() - start;
    releaser.join();
    EXPECT_TRUE(ran);
    EXPECT_GE(took, 200ms);
    EXPECT_LT(took, scaled(2s));
  }
  if (!kind().can.object) return;
  lock_settings holder;
  holder.owner = "holder";  // released by another thread below
  auto a = make(db1, name, holder);
  auto b = make(db2, name);
  for (const bool timed : {true, false}) {
    a->lock();
    std::thread releaser([&] {
      std::this_thread::sleep_for(150ms);
      a->unlock();
    });
    const auto start = clock_type::now();
    if (timed)
      EXPECT_TRUE(b->try_lock_for(5s));
    else
      b->lock();
    EXPECT_LT(clock_type::now() - start, scaled(2s));
    EXPECT_TRUE(b->holds());
    releaser.join();
    b->unlock();
  }
}

TEST_P(LockContract, BadNamesAreRejectedBeforeAnythingIsSent) {
  auto db = open();
  const std::string names[] = {"",     std::string(256, 'x'), std::string("a\0b", 3), "\xff\xfe",
                               "\xc3", "bad\xff utf8",        "over\xc0\xaflong",     "\xed\xa0\x80surrogate"};
  const auto before = read_lock_state(db);
  bool ran = false;
  for (const auto& name : names)
    for (const lock_wait wait : {lock_wait(std::monostate{}), lock_wait(1000ms), lock_wait(wait_forever{})})
      EXPECT_THROW(kind().run(db, name, wait, [&](lock_section&) { ran = true; }), invalid_argument) << name.size();
  EXPECT_FALSE(ran);
  EXPECT_EQ(read_lock_state(db), before) << "a rejected name changed the database";
  EXPECT_TRUE(kind().run(db, std::string(255, 'x'), std::monostate{}, [&](lock_section&) { ran = true; }));
  EXPECT_TRUE(ran) << "255 bytes is the limit, not beyond";
}

TEST_P(LockContract, NamesAreExactByteStrings) {
  // Case, a trailing space, NFC against NFD, metacharacters, the 255-byte limit, and names that
  // share their first 100 characters: all distinct locks, held at once, each on its own handle.
  // Behind a transaction-mode pooler (two server connections) a transaction-scoped lock holds a
  // server connection: there the names are held in pairs of neighbours instead.
  const auto base = fresh("exact");
  std::vector<std::string> names;
  for (const std::string& tail :
       std::vector<std::string>{"A", "a", "a ", "caf\xc3\xa9", "cafe\xcc\x81", std::string(100, 'x') + "1",
                                std::string(100, 'x') + "2", "'; DROP TABLE x; --"})
    names.push_back(base + tail);
  names.push_back(base + std::string(255 - base.size(), 'y'));
  const bool in_pairs = where().transaction_pooler && kind().can.transaction_scoped;
  auto observer = open();
  std::vector<database> handles;
  std::vector<std::unique_ptr<held_lock>> held;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (in_pairs && held.size() == 2) held.erase(held.begin());
    handles.push_back(open());
    held.push_back(kind().take(handles.back(), names[i], std::monostate{}));
    EXPECT_TRUE(held.back()) << "'" << names[i] << "' was taken as another name's lock";
    if (!in_pairs) {
      EXPECT_TRUE(kind().shown_held(observer, names[i])) << names[i];
    }
  }
  if (kind().name == "table_lock") {
    EXPECT_EQ(lock_rows(observer), static_cast<std::int64_t>(names.size()));
  }
}

const auto every_case = lock_cases(every_target());
SQLLOCK_CONTRACT_CASES(AllTargets, LockContract, every_case);

// ---- lock objects: table_lock, advisory_lock, named_lock

class ObjectLockContract : public LockContractTest {};

TEST_P(ObjectLockContract, StandardWrappersLockAndUnlock) {
  auto db = open();
  auto observer = open();
  const auto name = fresh("wrapped");
  auto lock = make(db, name);
  {
    std::lock_guard guard(*lock);
    EXPECT_TRUE(kind().shown_held(observer, name));
  }
  EXPECT_FALSE(kind().shown_held(observer, name));
  {
    std::unique_lock guard(*lock, std::try_to_lock);
    ASSERT_TRUE(guard.owns_lock());
  }
  {
    std::scoped_lock guard(*lock);
    EXPECT_TRUE(lock->holds());
  }
  EXPECT_FALSE(kind().shown_held(observer, name));
  EXPECT_FALSE(lock->holds());
}

TEST_P(ObjectLockContract, ARefusedObjectHoldsNothingAndCannotReleaseTheLock) {
  auto db1 = open();
  auto db2 = open();
  const auto name = fresh("mine");
  auto a = make(db1, name);
  auto b = make(db2, name);
  ASSERT_TRUE(a->try_lock());
  EXPECT_EQ(a->name(), name);
  EXPECT_TRUE(a->holds());
  if (const auto c = a->count()) {
    EXPECT_EQ(*c, 1);
  }
  EXPECT_FALSE(b->try_lock());
  EXPECT_FALSE(b->holds());
  const auto before = read_lock_state(db1);  // after the refusal, which may draw a fence
  EXPECT_THROW(b->release(), not_held);
  EXPECT_EQ(read_lock_state(db1), before) << "a release by a non-owner changed the database";
  EXPECT_TRUE(a->holds());
  EXPECT_TRUE(kind().shown_held(db2, name));
  a->release();
  EXPECT_FALSE(a->holds());
  EXPECT_FALSE(kind().shown_held(db2, name));
}

TEST_P(ObjectLockContract, OverReleaseIsNotHeldAndUnlockReportsIt) {
  auto db = open();
  error_sink errors;
  lock_settings s;
  s.on_unlock_error = errors.callback();
  const auto name = fresh("once");
  auto lock = make(db, name, s);
  EXPECT_THROW(lock->release(), not_held) << "release without lock";
  lock->unlock();  // reported, not thrown
  {
    std::lock_guard guard(errors.mu);
    ASSERT_EQ(errors.messages.size(), 1u);
    EXPECT_NE(errors.messages[0].find("not held"), std::string::npos) << errors.messages[0];
  }
  ASSERT_TRUE(lock->try_lock());
  lock->release();
  EXPECT_THROW(lock->release(), not_held) << "more releases than locks";
  if (kind().can.fenced) {
    EXPECT_THROW(lock->fence(), not_held);
  }
  EXPECT_FALSE(kind().shown_held(db, name));
  EXPECT_EQ(lock_rows(db), 0);
}

const auto object_cases = with(&lock_capabilities::object, every_target());
SQLLOCK_CONTRACT_CASES(AllTargets, ObjectLockContract, object_cases);

// ---- lock objects whose owner is the calling thread or an owner key: every object kind but the
// semaphore (a permit is its own owner)

class OwnedLockContract : public LockContractTest {};

TEST_P(OwnedLockContract, AnotherThreadOfTheHolderIsAnotherOwner) {
  auto db = open();
  error_sink errors;
  lock_settings s;
  s.on_unlock_error = errors.callback();
  const auto name = fresh("threads");
  auto lock = make(db, name, s);
  lock->lock();
  std::thread([&] {
    EXPECT_FALSE(lock->try_lock()) << "another thread is another owner";
    EXPECT_FALSE(lock->holds());
    EXPECT_THROW(lock->release(), not_held);
    lock->unlock();  // reported, not thrown
  }).join();
  {
    std::lock_guard guard(errors.mu);
    ASSERT_EQ(errors.messages.size(), 1u);
    EXPECT_NE(errors.messages[0].find("another thread"), std::string::npos) << errors.messages[0];
  }
  EXPECT_TRUE(lock->holds());
  EXPECT_TRUE(kind().shown_held(db, name));
  lock->unlock();
  EXPECT_FALSE(kind().shown_held(db, name));
}

TEST_P(OwnedLockContract, AnExplicitOwnerKeyLetsAnotherThreadRelease) {
  auto db = open();
  lock_settings s;
  s.owner = "worker-pool";
  const auto name = fresh("moved");
  auto lock = make(db, name, s);
  lock->lock();
  std::thread([&] {
    EXPECT_TRUE(lock->holds());
    lock->release();
  }).join();
  EXPECT_FALSE(kind().shown_held(db, name));
  EXPECT_EQ(lock_rows(db), 0);
}

const auto owned_cases = with(&lock_capabilities::owner_keyed, every_target());
SQLLOCK_CONTRACT_CASES(AllTargets, OwnedLockContract, owned_cases);

// ---- re-entrant kinds: table_lock, advisory_lock, named_lock

class ReentrantLockContract : public LockContractTest {};

TEST_P(ReentrantLockContract, ReentryStacksAndOnlyTheLastReleaseFreesIt) {
  constexpr int kDepth = 5;
  auto db1 = open();
  auto db2 = open();
  const auto name = fresh("deep");
  auto a = make(db1, name);
  auto b = make(db2, name);
  const auto level = [&](std::int64_t want) {
    if (const auto c = a->count()) {
      EXPECT_EQ(*c, want) << "count()";
    }
    if (kind().recorded_level) {
      EXPECT_EQ(kind().recorded_level(db2, name), want) << "the level the database records";
    }
  };
  a->lock();
  const auto fence = kind().can.fenced ? a->fence() : 0;
  for (int i = 2; i <= kDepth; ++i) {
    ASSERT_TRUE(a->try_lock()) << "level " << i;
    level(i);
    if (kind().can.fenced) {
      EXPECT_EQ(a->fence(), fence) << "a re-entry keeps the fence";
    }
  }
  for (int i = kDepth - 1; i >= 1; --i) {
    a->unlock();
    level(i);
    EXPECT_TRUE(a->holds());
    EXPECT_FALSE(b->try_lock()) << i << " of " << kDepth << " levels are still held";
  }
  a->unlock();
  level(0);
  EXPECT_FALSE(a->holds());
  EXPECT_FALSE(kind().shown_held(db2, name));
  EXPECT_TRUE(b->try_lock());
  b->unlock();
}

TEST_P(ReentrantLockContract, TwoObjectsOfOneOwnerReEnter) {
  auto db = open();
  auto observer = open();
  const auto name = fresh("same_owner");
  auto a = make(db, name);
  auto b = make(db, name);
  ASSERT_TRUE(a->try_lock());
  ASSERT_TRUE(b->try_lock()) << "same owner, same handle: a second level, not a refusal";
  if (const auto c = a->count()) {
    EXPECT_EQ(*c, 1) << "count() is per object";
  }
  if (const auto c = b->count()) {
    EXPECT_EQ(*c, 1) << "count() is per object";
  }
  if (kind().recorded_level) {
    EXPECT_EQ(kind().recorded_level(observer, name), 2);
  }
  if (kind().can.shared) {
    EXPECT_THROW(b->release_shared(), not_held);
  }
  b->unlock();
  EXPECT_TRUE(kind().shown_held(observer, name)) << "a's level remains";
  EXPECT_TRUE(a->holds());
  a->unlock();
  EXPECT_FALSE(kind().shown_held(observer, name));
}

TEST_P(ReentrantLockContract, DestroyingALockReleasesEveryLevel) {
  auto db = open();
  auto other = open();
  const auto name = fresh("destroy");
  {
    auto a = make(db, name);
    a->lock();
    a->lock();
    if (kind().can.shared) a->lock_shared();
  }
  EXPECT_FALSE(kind().shown_held(other, name)) << "in any mode";
  auto b = make(other, name);
  EXPECT_TRUE(b->try_lock());
  b->unlock();
}

const auto reentrant_cases = with(&lock_capabilities::reentrant, every_target());
SQLLOCK_CONTRACT_CASES(AllTargets, ReentrantLockContract, reentrant_cases);

// ---- waits that take a std::stop_token: the leased kinds and the session kinds

class StoppableLockContract : public LockContractTest {};

// A stop ends a wait promptly, holding nothing and leaving nothing behind: a queue kind gives its
// place back (a place left would stand ahead of a newcomer for its 60 s lease, renewed while the
// waiter's object lives). A stop requested before the call leaves one attempt.
TEST_P(StoppableLockContract, AStopEndsTheWaitPromptlyAndLeavesNothingBehind) {
  auto db1 = open();
  auto db2 = open();
  auto db3 = open();
  const auto name = fresh("stopped");
  lock_settings holder;
  holder.owner = "holder";
  auto a = make(db1, name, holder);
  a->lock();
  lock_settings long_lease;
  long_lease.ttl = 60s;
  auto b = make(db2, name, long_lease);
  for (const bool timed : {false, true}) {
    SCOPED_TRACE(timed ? "try_lock_for(30 s, stop)" : "lock(stop)");
    std::stop_source stop;
    const stop_after stopper(stop, 300ms);
    const bool got = timed ? b->try_lock_for(30s, stop.get_token()) : b->lock(stop.get_token());
    const auto took = clock_type::now() - stopper.started();
    EXPECT_FALSE(got) << "acquired while the lock was held";
    EXPECT_GE(took, 300ms) << "ended before the stop";
    EXPECT_LT(took, scaled(1300ms)) << "the stop did not end the wait promptly";
    EXPECT_FALSE(b->holds());
  }
  std::stop_source stopped;
  stopped.request_stop();
  auto start = clock_type::now();
  EXPECT_FALSE(b->lock(stopped.get_token())) << "a stop before the call leaves one attempt, refused here";
  EXPECT_LT(clock_type::now() - start, scaled(1s));
  a->unlock();
  auto c = make(db3, name);
  EXPECT_TRUE(c->try_lock()) << "a stopped wait left its place (or a row) behind";
  c->unlock();
  EXPECT_TRUE(b->lock(stopped.get_token())) << "a stop before the call leaves one attempt, granted on a free lock";
  EXPECT_TRUE(b->holds());
  b->unlock();
}

// A stop ends the wait only: what the waiting owner already holds stays held — for a session kind,
// the stop cancels the waiting statement and not the session, which holds the owner's other locks.
TEST_P(StoppableLockContract, AStopEndsOnlyTheWaitAndTheWaitersOtherLocksStayHeld) {
  auto db1 = open();
  auto db2 = open();
  const auto contended = fresh("contended");
  const auto kept = fresh("kept");
  lock_settings holder;
  holder.owner = "holder";
  auto a = make(db1, contended, holder);
  a->lock();
  auto b_kept = make(db2, kept);
  b_kept->lock();
  auto b = make(db2, contended);
  std::stop_source stop;
  {
    const stop_after stopper(stop, 300ms);
    EXPECT_FALSE(b->lock(stop.get_token()));
  }
  EXPECT_TRUE(b_kept->holds()) << "the stop took the owner's other lock with it";
  auto other = make(db1, kept, holder);
  EXPECT_FALSE(other->try_lock()) << "the waiter's other lock was freed by the stop";
  // The waiter's handle goes on working: the contended lock, freed, is granted to it.
  a->unlock();
  EXPECT_TRUE(b->try_lock_for(5s));
  b->unlock();
  b_kept->unlock();
  EXPECT_TRUE(other->try_lock());
  other->unlock();
}

// A stop ends a wait queued behind another thread of the same owner too: a session kind's second
// waiter waits for the owner's one session, busy with the first waiter's statement, and still sees
// its stop at once. The first waiter's wait goes on, and is granted when the holder lets go.
TEST_P(StoppableLockContract, AStopEndsAWaitBehindAnotherThreadOfTheSameOwner) {
  auto db1 = open();
  auto db2 = open();
  const auto name = fresh("same_owner");
  lock_settings holder;
  holder.owner = "holder";
  auto a = make(db1, name, holder);
  a->lock();
  lock_settings waiter;
  waiter.owner = "waiter";
  auto first = make(db2, name, waiter);
  auto second = make(db2, name, waiter);
  std::atomic<bool> first_got{false};
  std::thread first_waits([&] { first_got = first->try_lock_for(scaled(10s)); });
  std::this_thread::sleep_for(100ms);  // the first waiter's statement runs by then
  std::stop_source stop;
  {
    const stop_after stopper(stop, 300ms);
    EXPECT_FALSE(second->lock(stop.get_token()));
    EXPECT_LT(clock_type::now() - stopper.started(), scaled(1300ms)) << "the stop waited for the other thread";
  }
  EXPECT_FALSE(second->holds());
  a->unlock();
  first_waits.join();
  EXPECT_TRUE(first_got) << "the second waiter's stop ended the first one's wait";
  first->unlock();
  auto c = make(db1, name);
  EXPECT_TRUE(c->try_lock_for(5s)) << "a wait left something behind";
  c->unlock();
}

// A stop that races the holder's release either ends the wait holding nothing or returns a grant
// the waiter holds — never a lock that nobody knows it holds: for a session kind, a cancel that
// reaches the server just as GET_LOCK or pg_advisory_lock grants is found and kept.
TEST_P(StoppableLockContract, AStopRacingAReleaseNeverLeavesTheLockHeldByNobody) {
  auto db1 = open();
  auto db2 = open();
  auto db3 = open();
  const auto name = fresh("raced");
  lock_settings holder;
  holder.owner = "holder";
  auto a = make(db1, name, holder);
  auto b = make(db2, name);
  auto c = make(db3, name, holder);
  int granted = 0;
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    a->lock();
    std::stop_source stop;
    std::thread racer([&] {
      std::this_thread::sleep_for(100ms);  // b waits by then
      if (round % 2 == 0) a->unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(250 * (round / 2)));
      stop.request_stop();
      if (round % 2 == 1) a->unlock();
    });
    const bool got = b->lock(stop.get_token());
    racer.join();
    if (got) {
      ++granted;
      EXPECT_TRUE(b->holds()) << "a grant returned that the waiter does not hold";
      b->unlock();
    } else {
      EXPECT_FALSE(b->holds());
    }
    EXPECT_TRUE(c->try_lock_for(5s)) << "the lock stayed held by nobody after the race";
    c->unlock();
  }
  RecordProperty("granted", granted);
}

const auto stoppable_cases = with(&lock_capabilities::stoppable, every_target());
SQLLOCK_CONTRACT_CASES(AllTargets, StoppableLockContract, stoppable_cases);

// ---- session-scoped kinds: advisory_lock, named_lock

class SessionScopedLockContract : public LockContractTest {};

TEST_P(SessionScopedLockContract, KillingTheHoldersSessionSignalsLostWithinKeepalive) {
  auto db = open();
  auto admin = open();
  const auto name = fresh("kill");
  std::atomic<int> callbacks{0};
  lock_settings s;
  s.keepalive = 500ms;
  s.on_lost = [&] { ++callbacks; };
  auto lock = make(db, name, s);
  lock->lock();
  const auto token = lock->lost_token();
  EXPECT_FALSE(token.stop_requested());
  kind().kill_holder_session(admin, name);
  if (HasFatalFailure()) return;
  const auto took = time_until([&] { return token.stop_requested(); }, scaled(3s));
  EXPECT_LE(took, scaled(1500ms)) << "lost within keepalive + 1 s";
  EXPECT_LE(time_until([&] { return callbacks.load() == 1; }, scaled(3s)), scaled(1500ms)) << "on_lost runs once";
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(callbacks.load(), 1);
  EXPECT_FALSE(lock->holds());
  if (const auto c = lock->count()) {
    EXPECT_EQ(*c, 1) << "the level stays recorded until released";
  }
  EXPECT_THROW(lock->release(), not_held);
  if (const auto c = lock->count()) {
    EXPECT_EQ(*c, 0);
  }
  // The handle recovers: a new session for the next acquisition.
  if (kind().can.freed_after_session_end > 0ms)
    ASSERT_TRUE(lock->try_lock_for(kind().can.freed_after_session_end)) << "a new session for the next acquisition";
  else
    ASSERT_TRUE(lock->try_lock()) << "a new session for the next acquisition";
  EXPECT_TRUE(lock->holds());
  EXPECT_FALSE(lock->lost_token().stop_requested());
  lock->unlock();
}

const auto session_cases = with(&lock_capabilities::session_scoped, all_targets());
SQLLOCK_CONTRACT_CASES(ServerTargets, SessionScopedLockContract, session_cases);

// ---- kinds a dialect does not have

class UnsupportedLockContract : public LockContractTest {};

TEST_P(UnsupportedLockContract, EveryEntryPointSaysNotSupportedAndNamesTheAlternative) {
  auto db = open();
  bool ran = false;
  for (const lock_wait wait : {lock_wait(std::monostate{}), lock_wait(1000ms), lock_wait(wait_forever{})}) {
    try {
      kind().run(db, "x", wait, [&](lock_section&) { ran = true; });
      ADD_FAILURE() << "expected not_supported";
    } catch (const not_supported& e) {
      const std::string what = e.what();
      for (const auto& says : kind().unsupported_says(where().dialect))
        EXPECT_NE(what.find(says), std::string::npos) << "names " << says << ": " << what;
    }
  }
  EXPECT_FALSE(ran);
  if (kind().other_entry_points) kind().other_entry_points(db);
}

const auto unsupported_cases = unsupported_lock_cases(all_targets());
SQLLOCK_CONTRACT_CASES(AllTargets, UnsupportedLockContract, unsupported_cases);

}  // namespace
}  // namespace sqllock::test
