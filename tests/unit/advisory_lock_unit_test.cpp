// A session advisory lock's waiting statement carries its own bound: pg_advisory_lock runs in one
// statement with lock_timeout set for that statement's transaction alone (the deadline's remaining
// milliseconds, or 0 for no limit), so no SET before it and no RESET after it can reach another
// server session than the wait's (a transaction-mode pooler), and a contended timed wait costs two
// round trips, not four. A scripted connection (no server): any other statement is unexpected.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dialect/session_lock_sql.hpp"
#include "sqllock/advisory_lock.hpp"
#include "unit/fake_handle.hpp"

namespace test {
namespace {

using namespace std::chrono_literals;

class AdvisoryLockUnitTest : public ::testing::Test {
 protected:
  AdvisoryLockUnitTest() {
    const auto limit = d::dead_peer_limit_statements(h.impl.spec(), std::chrono::seconds(1));
    if (limit) {
      h.server->on(limit->set, rows({}));
      if (!limit->reset.empty()) h.server->on(limit->reset, rows({}));
    }
    h.server->on(sql.try_lock[0][0], rows({{"false"}}));  // held elsewhere: the wait follows
    h.server->on(sql.lock[0][0], [this](std::span<const d::value> params) {
      bounds.push_back(text(params.back()));
      return rows({{""}});
    });
    h.server->on(sql.unlock[0][0], rows({{"true"}}));
  }

  fake_handle h;
  const d::advisory_sql& sql = d::advisory_statements(sqllock::dialect_kind::postgresql);
  std::vector<std::string> bounds;  // the bound each waiting statement carried
};

TEST_F(AdvisoryLockUnitTest, ATimedWaitCarriesItsBoundInTheWaitingStatement) {
  sqllock::advisory_lock lock(h.db, sqllock::advisory_key(42));
  ASSERT_TRUE(lock.try_lock_for(2s));
  lock.unlock();
  ASSERT_EQ(bounds.size(), 1u);
  EXPECT_GT(std::stoll(bounds[0]), 1000) << "milliseconds left of the 2 s";
  EXPECT_LE(std::stoll(bounds[0]), 2000);
  EXPECT_TRUE(h.server->unexpected().empty()) << "a statement besides try, wait and unlock: "
                                              << (h.server->unexpected().empty() ? "" : h.server->unexpected()[0]);
}

TEST_F(AdvisoryLockUnitTest, AnUntimedWaitLiftsAConfiguredLimitInTheSameStatement) {
  sqllock::advisory_lock lock(h.db, sqllock::advisory_key(42));
  lock.lock();
  lock.unlock();
  ASSERT_EQ(bounds.size(), 1u);
  EXPECT_EQ(bounds[0], "0") << "lock_timeout 0: no limit for this wait";
  EXPECT_TRUE(h.server->unexpected().empty());
}

}  // namespace
}  // namespace test
