// A named lock (GET_LOCK) whose acquire failed with an error its session survived: the server may
// have granted the lock all the same (a client error that lost the answer), and a session that
// goes back to the pool holding a lock nobody records would lock everyone else out until the pool
// closes it. So such a session is reset (RELEASE_ALL_LOCKS) before it is reused — and only such
// a one. A scripted connection (no server): a real server cannot be made to lose one answer.
// Also the dead-peer limit (SET SESSION wait_timeout) a session sets: once per connection, kept
// between pins, and never given to the pool.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "dialect/galera_sql.hpp"
#include "dialect/session_lock_sql.hpp"
#include "sqllock/error.hpp"
#include "core/session/pinned_session.hpp"
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
  // The connections (1, 2, ... in opening order) that ran `statement`.
  std::set<int> connections_running(const std::string& statement) const {
    std::set<int> out;
    for (const auto& c : h.server->calls())
      if (c.sql == statement) out.insert(c.connection);
    return out;
  }
  void lock_and_unlock(sqllock::named_lock& lock) {
    ASSERT_TRUE(lock.try_lock());
    lock.unlock();
  }

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

TEST_F(NamedLockUnitTest, ALockUnlockLoopSetsTheServerLimitOnceAndNeverResetsIt) {
  h.server->on(sql.get_lock, rows({{"1"}}));
  sqllock::named_lock lock(h.db, "job");
  for (int i = 0; i < 5; ++i) lock_and_unlock(lock);
  const auto limit = *d::dead_peer_limit_statements(h.impl.spec(), std::chrono::seconds(1));
  EXPECT_EQ(h.server->count(limit.set), 1u) << "set once per connection, not once per cycle";
  EXPECT_EQ(h.server->count(limit.reset), 0u);
  EXPECT_EQ(connections_running(sql.get_lock), std::set<int>{1});
  EXPECT_TRUE(h.server->unexpected().empty());
}

TEST_F(NamedLockUnitTest, AConnectionIdleForHalfItsServerLimitIsClosedNotReused) {
  h.server->on(sql.get_lock, rows({{"1"}}));
  sqllock::named_lock lock(h.db, "job");
  lock_and_unlock(lock);
  // The server ends a connection silent for its limit; past half of it, it is not trusted.
  h.clock->advance(d::server_dead_peer_limit(sqllock::named_lock_options{}.keepalive) / 2);
  lock_and_unlock(lock);
  const auto limit = *d::dead_peer_limit_statements(h.impl.spec(), std::chrono::seconds(1));
  EXPECT_EQ(connections_running(sql.get_lock), (std::set<int>{1, 2}));
  EXPECT_EQ(connections_running(limit.set), (std::set<int>{1, 2}));
  EXPECT_EQ(h.server->count(limit.reset), 0u) << "a limited connection went back to the pool";
}

TEST_F(NamedLockUnitTest, OtherWorkNeverGetsAConnectionWithTheServerLimitSet) {
  h.server->on(sql.get_lock, rows({{"1"}}));
  {
    sqllock::named_lock lock(h.db, "job");
    lock_and_unlock(lock);
  }
  // The pool's connection for anything else: not the session's, whose wait_timeout is short.
  h.server->on("SELECT 2", rows({{"2"}}));
  {
    auto conn = h.impl.borrow();
    conn->exec_direct("SELECT 2");
  }
  const auto limit = *d::dead_peer_limit_statements(h.impl.spec(), std::chrono::seconds(1));
  const auto limited = connections_running(limit.set);
  const auto other = connections_running("SELECT 2");
  ASSERT_EQ(other.size(), 1u);
  EXPECT_FALSE(limited.contains(*other.begin()) && h.server->count(limit.reset) == 0)
      << "the pool handed out connection " << *other.begin() << " with its server limit still set";
}

}  // namespace
}  // namespace test
