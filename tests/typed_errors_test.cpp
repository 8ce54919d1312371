// Typed, retryable errors and overflow-safe timed waits, against the private test servers: a real
// deadlock between two sessions surfaces as sqllock::deadlock (a transaction_rollback, still a
// backend_error) through the row-lock API and session-level advisory locks, and the
// transaction-level advisory lock waits for std::chrono::hours::max() instead of giving up at once.
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/row_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

std::vector<target> server_targets(std::optional<dialect_kind> only = std::nullopt) {
  std::vector<target> out;
  for (auto& t : all_targets())
    if (t.dialect != dialect_kind::sqlite && (!only || t.dialect == *only)) out.push_back(t);
  return out;
}

// What one side of a deadlock saw: nothing (it won), or the exception it caught.
struct outcome {
  bool failed = false;
  bool is_deadlock = false;
  bool is_rollback = false;
  bool is_backend = false;
  std::string what;
};

template <class F>
outcome run_side(F&& f) {
  outcome o;
  try {
    f();
  } catch (const error& e) {
    o.failed = true;
    o.is_deadlock = dynamic_cast<const deadlock*>(&e) != nullptr;
    o.is_rollback = dynamic_cast<const transaction_rollback*>(&e) != nullptr;
    o.is_backend = dynamic_cast<const backend_error*>(&e) != nullptr;
    o.what = e.what();
  }
  return o;
}

// Exactly one side lost, and it saw a deadlock that is also a transaction_rollback and a
// backend_error, with a message that says to retry.
void expect_one_deadlock_victim(const outcome& a, const outcome& b) {
  ASSERT_NE(a.failed, b.failed) << "exactly one victim; a: " << a.what << " | b: " << b.what;
  const outcome& victim = a.failed ? a : b;
  EXPECT_TRUE(victim.is_deadlock) << victim.what;
  EXPECT_TRUE(victim.is_rollback) << victim.what;
  EXPECT_TRUE(victim.is_backend) << victim.what;
  EXPECT_NE(victim.what.find("retry"), std::string::npos) << victim.what;
}

class TypedErrorsTest : public LockTableTest {};

// Two with_row_lock calls each hold one row and, in their transaction, ask for the other's row.
TEST_P(TypedErrorsTest, ARowLockDeadlockArrivesAsSqllockDeadlock) {
  auto db = open();
  with_row_lock(db, "left", [](row_lock_tx&) {});  // both rows exist before the race
  with_row_lock(db, "right", [](row_lock_tx&) {});
  const std::string lock_other = "SELECT resource FROM " + table_ + "_rows WHERE resource = $1 FOR UPDATE";
  std::promise<void> a_holds, b_holds;
  auto a_ready = a_holds.get_future().share();
  auto b_ready = b_holds.get_future().share();
  auto side = [&](std::string mine, std::string other, std::promise<void>& holds, std::shared_future<void> peer) {
    return run_side([&] {
      with_row_lock(db, mine, [&](row_lock_tx& tx) {
        holds.set_value();
        peer.wait();
        tx.exec(lock_other, {other});  // closes the cycle; one side is the server's victim
      });
    });
  };
  auto a = std::async(std::launch::async, side, "left", "right", std::ref(a_holds), b_ready);
  auto b = std::async(std::launch::async, side, "right", "left", std::ref(b_holds), a_ready);
  expect_one_deadlock_victim(a.get(), b.get());
}

INSTANTIATE_TEST_SUITE_P(ServerTargets, TypedErrorsTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

class AdvisoryTypedErrorsTest : public LockTableTest {};

// Two sessions each hold one advisory key and wait for the other's: PostgreSQL's 40P01.
TEST_P(AdvisoryTypedErrorsTest, AnAdvisoryLockDeadlockArrivesAsSqllockDeadlock) {
  auto db_a = open();
  auto db_b = open();
  std::promise<void> a_holds, b_holds;
  auto a_ready = a_holds.get_future().share();
  auto b_ready = b_holds.get_future().share();
  auto side = [&](database& db, std::string mine, std::string other, std::promise<void>& holds,
                  std::shared_future<void> peer) {
    return run_side([&] {
      advisory_lock first(db, mine);
      advisory_lock second(db, other);
      std::lock_guard guard(first);
      holds.set_value();
      peer.wait();
      std::lock_guard closes_the_cycle(second);
    });
  };
  auto a = std::async(std::launch::async, side, std::ref(db_a), "dl-left", "dl-right", std::ref(a_holds), b_ready);
  auto b = std::async(std::launch::async, side, std::ref(db_b), "dl-right", "dl-left", std::ref(b_holds), a_ready);
  expect_one_deadlock_victim(a.get(), b.get());
}

// Holds the session-level advisory lock `name` on its own handle, from another thread, for
// `hold`, then releases it.
class timed_holder {
 public:
  timed_holder(const database& db, const std::string& name, std::chrono::milliseconds hold) {
    std::promise<void> held;
    auto ready = held.get_future();
    thread_ = std::thread([db, name, hold, &held] {
      advisory_lock lock(db, name);
      lock.lock();
      held.set_value();
      std::this_thread::sleep_for(hold);
      lock.unlock();
    });
    ready.get();
  }
  ~timed_holder() { thread_.join(); }
  timed_holder(const timed_holder&) = delete;
  timed_holder& operator=(const timed_holder&) = delete;

 private:
  std::thread thread_;
};

TEST_P(AdvisoryTypedErrorsTest, TryWithAdvisoryXactLockForHoursMaxWaitsForTheHolder) {
  auto waiter = open();
  timed_holder holder(open(), "xact-hours-max", 1s);
  const auto start = clock_type::now();
  const bool ran = try_with_advisory_xact_lock_for(waiter, "xact-hours-max", std::chrono::hours::max(), [] {});
  const auto waited = clock_type::now() - start;
  EXPECT_TRUE(ran) << "hours::max() must wait like with_advisory_xact_lock, not give up at once";
  EXPECT_GE(waited, 700ms) << "it ran before the holder let go";
  EXPECT_LT(waited, scaled(30s));
}

TEST_P(AdvisoryTypedErrorsTest, TheDeprecatedNameSaturatesToo) {
  auto waiter = open();
  timed_holder holder(open(), "xact-hours-max-old", 1s);
  const auto start = clock_type::now();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const auto result = try_with_advisory_xact_lock(waiter, "xact-hours-max-old", std::chrono::hours::max(),
                                                  [] { return 7; });
#pragma GCC diagnostic pop
  EXPECT_EQ(result, std::optional<int>(7));
  EXPECT_GE(clock_type::now() - start, 700ms);
}

TEST_P(AdvisoryTypedErrorsTest, TryWithAdvisoryXactLockForAFarNegativeWaitDoesNotWait) {
  auto waiter = open();
  timed_holder holder(open(), "xact-hours-min", 1s);
  const auto start = clock_type::now();
  const bool ran = try_with_advisory_xact_lock_for(waiter, "xact-hours-min", std::chrono::hours::min(),
                                                   [] { ADD_FAILURE() << "must not run"; });
  EXPECT_FALSE(ran);
  EXPECT_LT(clock_type::now() - start, 700ms);
}

INSTANTIATE_TEST_SUITE_P(PostgreSQL, AdvisoryTypedErrorsTest,
                         ::testing::ValuesIn(server_targets(dialect_kind::postgresql)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
