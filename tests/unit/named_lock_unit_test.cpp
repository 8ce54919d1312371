// A named lock (GET_LOCK) whose acquire failed with an error its session survived: the server may
// have granted the lock all the same (a client error that lost the answer), and a session that
// goes back to the pool holding a lock nobody records would lock everyone else out until the pool
// closes it. So such a session is reset (RELEASE_ALL_LOCKS) before it is reused — and only such
// a one. A scripted connection (no server): a real server cannot be made to lose one answer.
#include <gtest/gtest.h>

#include <string>

#include "dialect/galera_sql.hpp"
#include "dialect/session_lock_sql.hpp"
#include "sqllock/error.hpp"
#include "sqllock/named_lock.hpp"
#include "unit/fake_handle.hpp"

namespace test {
namespace {

class NamedLockUnitTest : public ::testing::Test {
 protected:
  NamedLockUnitTest() {
    const auto& probe = d::galera_probe_statements(sqllock::dialect_kind::mysql);
    h.server->on(probe.cluster_size, rows({}));
    h.server->on(probe.wsrep_on, rows({}));
    const auto limit = *d::dead_peer_limit_statements(h.impl.spec(), std::chrono::seconds(1));
    h.server->on(limit.set, rows({}));
    h.server->on(limit.reset, rows({}));
    for (const auto& statement : d::session_reset_statements(sqllock::dialect_kind::mysql))
      h.server->on(statement, rows({}));
    h.server->on(sql.release_lock, rows({{"1"}}));
  }
  // How often the session was reset (all its GET_LOCK locks released).
  std::size_t resets() const { return h.server->count(sql.release_all); }

  fake_handle h{"mysql://unit@fake/unit"};
  const d::named_lock_sql& sql = d::named_lock_statements(sqllock::dialect_kind::mysql);
};

TEST_F(NamedLockUnitTest, AnAcquireThatFailedOnALiveSessionResetsItBeforeReuse) {
  h.server->fail(
      sql.get_lock, [] { throw sqllock::backend_error("fake: the answer was lost", "HY000", 2027); }, 1);
  sqllock::named_lock lock(h.db, "job");
  EXPECT_THROW((void)lock.try_lock(), sqllock::backend_error);
  EXPECT_EQ(resets(), 1u) << "the session went back to the pool maybe holding the lock";
  EXPECT_TRUE(h.server->unexpected().empty());
}

TEST_F(NamedLockUnitTest, ADeadlockVictimTookNothingAndItsSessionIsNotReset) {
  h.server->fail(
      sql.get_lock, [] { throw sqllock::backend_error("fake: deadlock", "40001", 1213); }, 1);
  sqllock::named_lock lock(h.db, "job");
  EXPECT_THROW((void)lock.try_lock(), sqllock::deadlock);
  EXPECT_EQ(resets(), 0u);
  EXPECT_TRUE(h.server->unexpected().empty());
}

TEST_F(NamedLockUnitTest, AGrantAndItsReleaseLeaveTheSessionAsItWas) {
  h.server->on(sql.get_lock, rows({{"1"}}));
  sqllock::named_lock lock(h.db, "job");
  ASSERT_TRUE(lock.try_lock());
  lock.unlock();
  EXPECT_EQ(h.server->count(sql.release_lock), 1u);
  EXPECT_EQ(resets(), 0u);
  EXPECT_TRUE(h.server->unexpected().empty());
}

}  // namespace
}  // namespace test
