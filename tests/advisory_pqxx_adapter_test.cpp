// Transaction-level advisory locks inside the application's own libpqxx transaction
// (sqllock/adapters/pqxx.hpp).
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/transaction>

#include <atomic>
#include <random>
#include <thread>

#include "sqllock/adapters/pqxx.hpp"
#include "sqllock/error.hpp"
#include "support/session_lock_fixture.hpp"
#include "support/stop_after.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

class AdvisoryPqxxAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As the runtime role (see test_env.hpp): advisory locks need no privilege.
    uri_ = postgres_uri() ? postgres_runtime_uri().value_or(*postgres_uri()) : "";
    SQLLOCK_REQUIRE_SERVER(uri_);
  }
  // Advisory locks the transaction's session holds.
  static long held_here(pqxx::transaction_base& tx) {
    return tx
        .exec("SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()")[0][0]
        .as<long>();
  }
  std::string uri_;
};

// A key that another session holds, and an application transaction, whose own lock_timeout is
// 7 s, that wants it.
struct contended_key {
  contended_key(const std::string& uri, const std::string& name)
      : db(uri), key(advisory_key::from_name(unique_name(name))), holder(db, key, holder_options()), conn(uri),
        tx(conn) {
    holder.lock();
    tx.exec("SET LOCAL lock_timeout = '7s'");
  }
  static advisory_lock_options holder_options() {
    advisory_lock_options o;
    o.owner = "holder";
    return o;
  }
  // The transaction's lock_timeout, which sqllock must leave as it was.
  std::string lock_timeout() { return tx.exec("SHOW lock_timeout")[0][0].as<std::string>(); }

  database db;
  advisory_key key;
  advisory_lock holder;
  pqxx::connection conn;
  pqxx::work tx;
};

TEST_F(AdvisoryPqxxAdapterTest, TheLockJoinsTheTransactionAndEndsWithIt) {
  database db(uri_);
  const auto key = advisory_key::from_name(unique_name("tx"));
  advisory_lock other(db, key);
  pqxx::connection c(uri_);
  {
    pqxx::work tx(c);
    advisory_xact_lock(tx, key);
    EXPECT_EQ(held_here(tx), 1);
    EXPECT_FALSE(other.try_lock());
    advisory_xact_lock(tx, key);  // re-entrant within the transaction
    tx.commit();
  }
  EXPECT_TRUE(other.try_lock());
  {
    pqxx::work tx(c);
    EXPECT_FALSE(try_advisory_xact_lock(tx, key));
    EXPECT_EQ(tx.exec("SELECT 1")[0][0].as<int>(), 1) << "the transaction is still usable";
    EXPECT_TRUE(try_advisory_xact_lock(tx, key, advisory_mode::shared) == false);
    other.unlock();
    EXPECT_TRUE(try_advisory_xact_lock(tx, unique_name("by_name")));
    tx.abort();
  }
}

TEST_F(AdvisoryPqxxAdapterTest, ATimedOutAttemptLeavesTheTransactionUsableAndItsSettingsAlone) {
  contended_key k(uri_, "timed");
  const auto& key = k.key;
  auto& holder = k.holder;
  auto& tx = k.tx;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(try_advisory_xact_lock_for(tx, key, 200ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_EQ(k.lock_timeout(), "7s");
  EXPECT_EQ(held_here(tx), 0);
  std::thread releaser([&] {
    std::this_thread::sleep_for(100ms);
    holder.unlock();
  });
  EXPECT_TRUE(try_advisory_xact_lock_for(tx, key, 5s));
  releaser.join();
  EXPECT_EQ(k.lock_timeout(), "7s");
  EXPECT_EQ(held_here(tx), 1);
  tx.commit();
}

// advisory_xact_lock(tx, key, stop) and try_advisory_xact_lock_for(…, stop): a stop ends the wait
// with false, the transaction usable and holding nothing; a stop before the call leaves one attempt
// without waiting; a wait that is not stopped is granted when the holder lets go.
TEST_F(AdvisoryPqxxAdapterTest, AStopEndsTheWaitAndLeavesTheTransactionUsable) {
  contended_key k(uri_, "stopped");
  const auto& key = k.key;
  auto& holder = k.holder;
  auto& tx = k.tx;
  for (const bool timed : {false, true}) {
    SCOPED_TRACE(timed ? "try_advisory_xact_lock_for(30 s, stop)" : "advisory_xact_lock(stop)");
    std::stop_source stop;
    const stop_after stopper(stop, 300ms);
    const bool got = timed ? try_advisory_xact_lock_for(tx, key, 30s, stop.get_token())
                           : advisory_xact_lock(tx, key, stop.get_token());
    const auto took = std::chrono::steady_clock::now() - stopper.started();
    EXPECT_FALSE(got);
    EXPECT_GE(took, 300ms) << "ended before the stop";
    EXPECT_LT(took, scaled(1300ms)) << "the stop did not end the wait promptly";
    EXPECT_EQ(held_here(tx), 0);
  }
  std::stop_source stopped;
  stopped.request_stop();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(advisory_xact_lock(tx, key, stopped.get_token()));
  EXPECT_LT(std::chrono::steady_clock::now() - start, scaled(1s)) << "a stop before the call waits not at all";
  EXPECT_EQ(k.lock_timeout(), "7s") << "the caller's setting is back";
  std::thread releaser([&] {
    std::this_thread::sleep_for(700ms);  // longer than two attempts
    holder.unlock();
  });
  std::stop_source never;
  EXPECT_TRUE(advisory_xact_lock(tx, key, never.get_token()));
  releaser.join();
  EXPECT_EQ(held_here(tx), 1);
  EXPECT_FALSE(holder.try_lock()) << "held by the transaction";
  tx.commit();
  EXPECT_TRUE(holder.try_lock()) << "and given back with it";
}

TEST_F(AdvisoryPqxxAdapterTest, TimeoutsRacingTheGrantNeverLeaveALockBehind) {
  database db(uri_);
  const auto key = advisory_key::from_name(unique_name("race"));
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    advisory_lock h(db, key);
    std::minstd_rand rng(1);
    while (!stop) {
      if (h.try_lock_for(20ms)) {
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
        h.unlock();
      }
    }
  });
  pqxx::connection c(uri_);
  std::minstd_rand rng(2);
  int acquired = 0;
  for (int i = 0; i < 300; ++i) {
    pqxx::work tx(c);
    const bool ok = try_advisory_xact_lock_for(tx, key, std::chrono::microseconds(1000 + rng() % 2000));
    EXPECT_EQ(held_here(tx), ok ? 1 : 0) << "round " << i;
    acquired += ok;
    tx.commit();
  }
  stop = true;
  churn.join();
  std::printf("[ info ] %d of 300 attempts acquired\n", acquired);
}

TEST_F(AdvisoryPqxxAdapterTest, ANontransactionIsRefused) {
  pqxx::connection c(uri_);
  pqxx::nontransaction tx(c);
  EXPECT_THROW(advisory_xact_lock(tx, advisory_key(1)), invalid_argument);
  EXPECT_THROW(advisory_xact_lock(tx, ""), invalid_argument);
}

}  // namespace
}  // namespace sqllock::test
