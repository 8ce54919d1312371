// Network loss under a pinned session (advisory_lock on PostgreSQL, named_lock on MySQL/MariaDB):
// the holder's connection runs through a TCP proxy that is then frozen, so its packets go nowhere
// and nothing ever fails — the keepalive ping just gets no answer. The holder must learn of the
// loss within keepalive + 1 s, its unlock must not hang, the rest of the handle must keep working,
// and the hung connection must be closed, not pooled, once it carries packets again.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "core/session/pinned_session.hpp"
#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/named_lock.hpp"
#include "support/client_sessions.hpp"
#include "support/fresh_database.hpp"
#include "support/processes.hpp"
#include "support/session_lock_fixture.hpp"
#include "support/tcp_proxy.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto kKeepalive = 300ms;
// The contract (session_lock_options::keepalive + 1 s) with 300 ms for scheduling, stretched in a
// sanitizer build (support/time_scale.hpp). Every wait below gives up well after it, and a wait
// that gives up reports a time past it.
const auto kLostBound = scaled(kKeepalive + 1s + 300ms);
// An unlock of a lost session returns at once; this only separates "fast" from "hung".
const auto kUnlockBound = scaled(1s);
// How long the waits below poll before giving up.
const auto kGiveUp = 2 * kLostBound;

std::chrono::milliseconds since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
}

// Counts on_lost calls and keeps on_unlock_error messages.
struct signals {
  std::atomic<int> lost{0};
  std::mutex mu;
  std::vector<std::string> unlock_errors;

  session_lock_options options(std::string owner = {}) {
    session_lock_options o;
    o.owner = std::move(owner);
    o.keepalive = kKeepalive;
    o.on_lost = [this] { ++lost; };
    o.on_unlock_error = [this](const std::exception& e) {
      std::lock_guard lock(mu);
      unlock_errors.emplace_back(e.what());
    };
    return o;
  }
};

class SessionLockNetlossTest : public SessionLockTest {
 protected:
  // The whole scenario for L, advisory_lock or named_lock (same constructor and contract).
  template <class L>
  void frozen_connection_scenario() {
    tcp_proxy proxy(GetParam().uri);
    const database through(proxy.uri());
    const database direct = open();
    const std::string name = unique_name("netloss");
    signals sig;
    L lock(through, name, sig.options());
    lock.lock();
    lock.lock();  // two levels: one for release(), one for unlock()
    const std::stop_token token = lock.lost_token();
    L rival(direct, name);
    ASSERT_FALSE(rival.try_lock()) << "held by the session behind the proxy";

    proxy.freeze();
    const auto frozen_at = clock_type::now();
    const auto took = time_until([&] { return token.stop_requested(); }, kGiveUp);
    std::printf("[ info ] %s: lost %lld ms after the network froze (keepalive %lld ms)\n", GetParam().name.c_str(),
                static_cast<long long>(took.count()), static_cast<long long>(kKeepalive.count()));
    EXPECT_LE(took, kLostBound) << "a hung ping is declared lost within keepalive + 1 s";
    EXPECT_LE(time_until([&] { return sig.lost.load() == 1; }, kGiveUp), kUnlockBound) << "on_lost runs";
    EXPECT_FALSE(lock.holds());
    EXPECT_EQ(lock.count(), 2) << "the levels stay recorded until released";

    // The ping still hangs on the connection, and must not hold up the owner.
    auto start = clock_type::now();
    EXPECT_THROW(lock.release(), not_held);
    EXPECT_LE(since(start), kUnlockBound) << "release() of a lost session returns at once";
    start = clock_type::now();
    lock.unlock();
    EXPECT_LE(since(start), kUnlockBound) << "unlock() of a lost session returns at once";
    EXPECT_EQ(lock.count(), 0);
    {
      std::lock_guard guard(sig.mu);
      ASSERT_EQ(sig.unlock_errors.size(), 1u);
      EXPECT_NE(sig.unlock_errors[0].find("lost"), std::string::npos) << sig.unlock_errors[0];
    }
    EXPECT_LE(since(frozen_at), kLostBound + 2 * kUnlockBound);

    // The handle keeps working meanwhile: another owner gets a new connection, and its session
    // is pinged — while the first ping still hangs, a connection that ends is noticed in time.
    const std::size_t before = proxy.accepted();
    signals sig2;
    L second(through, unique_name("netloss2"), sig2.options("second-owner"));
    second.lock();
    // (SOCI's MySQL backend connects twice and keeps the second connection: the newest is live.)
    ASSERT_GT(proxy.accepted(), before) << "a new connection: the hung one is not reused";
    const std::size_t live = proxy.accepted() - 1;
    const std::stop_token token2 = second.lost_token();
    std::this_thread::sleep_for(3 * kKeepalive);  // a few pings, all answered
    EXPECT_TRUE(second.holds());
    EXPECT_EQ(sig2.lost.load(), 0) << "a live session is not declared lost while another's ping hangs";
    proxy.cut(live);
    EXPECT_LE(time_until([&] { return token2.stop_requested(); }, kGiveUp), kLostBound)
        << "other sessions' pings keep running while one hangs";
    EXPECT_THROW(second.release(), not_held);

    // A handle that does not go through the frozen path works all along.
    L elsewhere(direct, unique_name("netloss3"));
    EXPECT_TRUE(elsewhere.try_lock());
    elsewhere.unlock();

    // The server still holds the first lock: it cannot know the network froze (MariaDB's
    // wait_timeout ends the silent session server_dead_peer_limit after its last statement, which
    // this run may have reached by now). Once packets flow again the hung ping returns, and its
    // connection is closed — ending the session and freeing the lock — rather than going back to
    // the pool with the lock still held.
    if (since(frozen_at) < detail::server_dead_peer_limit(kKeepalive) - kKeepalive - 500ms) {
      EXPECT_FALSE(rival.try_lock());
    }
    proxy.thaw();
    const auto freed = time_until(
        [&] {
          if (!rival.try_lock()) return false;
          rival.unlock();
          return true;
        },
        kGiveUp);
    EXPECT_LE(freed, scaled(2s)) << "the written-off connection is closed once its ping returns";
  }

  // An on_lost callback that destroys the lock object, called for a hung ping.
  template <class L>
  void destroy_in_callback_scenario() {
    tcp_proxy proxy(GetParam().uri);
    std::atomic<bool> destroyed{false};
    std::unique_ptr<L> lock;
    {
      const database through(proxy.uri());  // the lock object is the only user of this handle
      session_lock_options o;
      o.keepalive = kKeepalive;
      o.on_unlock_error = [](const std::exception&) {};
      o.on_lost = [&] {
        lock.reset();  // runs on the keepalive thread, which declared the ping hung
        destroyed = true;
      };
      lock = std::make_unique<L>(through, unique_name("netloss-cb"), o);
    }
    lock->lock();
    proxy.freeze();
    EXPECT_LE(time_until([&] { return destroyed.load(); }, kGiveUp), kLostBound);
    proxy.thaw();  // let the written-off ping return and close its connection
    std::this_thread::sleep_for(100ms);
  }

  // A holder process stopped (SIGSTOP) while a ping was in flight, whose answer then came while it
  // was stopped: when it resumes, the ping looks long overdue, but the answer is waiting in the
  // socket. That is no network loss, and the lock must stay held.
  template <class L>
  void stopped_holder_scenario() {
    int uri_pipe[2];
    int ready[2];
    int go[2];
    ASSERT_EQ(::pipe(uri_pipe), 0);
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(go), 0);
    process_group group;
    const pid_t holder = group.spawn([&] {
      ::close(uri_pipe[1]);
      std::string uri;  // the proxy's, sent once the parent has started it
      char buf[256];
      for (ssize_t n; (n = ::read(uri_pipe[0], buf, sizeof buf)) > 0;) uri.append(buf, static_cast<std::size_t>(n));
      const database through(uri);
      session_lock_options o;
      o.keepalive = kKeepalive;
      L lock(through, unique_name("netloss-stop"), o);
      lock.lock();
      const std::stop_token token = lock.lost_token();
      (void)!::write(ready[1], "x", 1);
      char c;
      if (::read(go[0], &c, 1) != 1) return 2;
      return token.stop_requested() ? 3 : lock.holds() ? 0 : 4;
    });
    // The proxy (and its threads) only after the fork: a child forked while they run can inherit
    // a lock one of them held (under ASan the child hung in its first allocation that way).
    tcp_proxy proxy(GetParam().uri);  // here: it forwards while the holder is stopped
    ASSERT_EQ(::write(uri_pipe[1], proxy.uri().data(), proxy.uri().size()), static_cast<ssize_t>(proxy.uri().size()));
    ::close(uri_pipe[1]);
    ::close(uri_pipe[0]);
    group.start();
    pollfd started{ready[0], POLLIN, 0};
    ASSERT_EQ(::poll(&started, 1, 60000), 1) << "the holder did not take its lock within 60 s";
    char c;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    proxy.freeze();
    // The next ping is sent within one keepalive and hangs; stop the holder before it is
    // kPingTimeout old, and let its answer through while the holder cannot read it.
    std::this_thread::sleep_for(kKeepalive + 50ms);
    ASSERT_EQ(::kill(holder, SIGSTOP), 0);
    proxy.thaw();
    std::this_thread::sleep_for(3 * detail::kPingTimeout);
    ASSERT_EQ(::kill(holder, SIGCONT), 0);
    std::this_thread::sleep_for(3 * kKeepalive);  // a few more pings, all answered
    ASSERT_EQ(::write(go[1], "g", 1), 1);
    EXPECT_EQ(group.wait_all(), 1) << "the holder still holds its lock (exit 3: declared lost)";
    for (int fd : {ready[0], ready[1], go[0], go[1]}) ::close(fd);
  }
};

TEST_P(SessionLockNetlossTest, AFrozenConnectionIsLostWithinKeepaliveAndNeverBlocksTheOwner) {
  if (GetParam().dialect == dialect_kind::postgresql)
    frozen_connection_scenario<advisory_lock>();
  else
    frozen_connection_scenario<named_lock>();
}

TEST_P(SessionLockNetlossTest, AnOnLostCallbackForAHungPingMayDestroyTheLockObject) {
  if (GetParam().dialect == dialect_kind::postgresql)
    destroy_in_callback_scenario<advisory_lock>();
  else
    destroy_in_callback_scenario<named_lock>();
}

TEST_P(SessionLockNetlossTest, AHolderStoppedWithAPingInFlightIsNotDeclaredLost) {
  if (GetParam().dialect == dialect_kind::postgresql)
    stopped_holder_scenario<advisory_lock>();
  else
    stopped_holder_scenario<named_lock>();
}

// The server's own dead-peer limit (core/session/pinned_session.hpp, server_dead_peer_limit): sqllock sets
// it on the holder's session when it pins it, derived from the keepalive — 2 × 300 ms + 2 s,
// rounded up: 3 s. Read back on the holder's own session, then the holder's network is frozen.
// MariaDB's wait_timeout ends the silent session and frees the lock — after the holder was told.
// PostgreSQL's TCP keepalive cannot be seen to act here: the frozen proxy's kernel still answers
// the probes (a userspace proxy keeps ACKing), so there this shows only that the settings are in
// effect on the session.
TEST_P(SessionLockNetlossTest, TheServerEndsASilentHoldersSessionOnlyAfterTheHolderWasTold) {
  const bool pg = GetParam().dialect == dialect_kind::postgresql;
  const auto limit = detail::server_dead_peer_limit(kKeepalive);
  ASSERT_EQ(limit, std::chrono::seconds(3));
  tcp_proxy proxy(GetParam().uri);
  const database through(proxy.uri());
  const database direct = open();
  const std::string name = unique_name("deadpeer");
  signals sig;
  std::unique_ptr<advisory_lock> advisory;
  std::unique_ptr<named_lock> named;
  std::stop_token token;
  if (pg) {
    advisory = std::make_unique<advisory_lock>(through, name, sig.options("dead-peer-probe"));
    advisory->lock();
    token = advisory->lost_token();
  } else {
    named = std::make_unique<named_lock>(through, name, sig.options("dead-peer-probe"));
    named->lock();
    token = named->lost_token();
  }

  // The settings on the holder's own session: pin it as its owner does and ask.
  {
    const auto registry = detail::session_registry::of(through);
    detail::session_pin pin(*registry, registry->pin("k:dead-peer-probe", kKeepalive));
    std::unique_lock use(pin->use);
    ASSERT_TRUE(pin->conn.has_value());
    auto ask = [&](const std::string& statement) {
      const auto r = (**pin->conn).exec_direct(statement);
      return r.rows.empty() || r.rows[0].empty() || !r.rows[0][0] ? std::string() : *r.rows[0][0];
    };
    if (pg) {
      EXPECT_EQ(ask("SHOW tcp_keepalives_idle"), "1");
      EXPECT_EQ(ask("SHOW tcp_keepalives_interval"), "1");
      EXPECT_EQ(ask("SHOW tcp_keepalives_count"), "3");
      EXPECT_EQ(ask("SHOW tcp_user_timeout"), "3000");
    } else {
      EXPECT_EQ(ask("SELECT @@SESSION.wait_timeout"), "3");
    }
  }

  auto rival_gets_it = [&] {
    if (pg) {
      advisory_lock rival(direct, name);
      if (!rival.try_lock()) return false;
      rival.unlock();
    } else {
      named_lock rival(direct, name);
      if (!rival.try_lock()) return false;
      rival.unlock();
    }
    return true;
  };
  ASSERT_FALSE(rival_gets_it()) << "held by the session behind the proxy";
  if (pg) return;  // the frozen proxy's kernel would answer the server's keepalive probes
  proxy.freeze();
  const auto frozen_at = clock_type::now();
  const auto told = time_until([&] { return token.stop_requested(); }, kGiveUp);
  EXPECT_LE(told, kLostBound);
  std::chrono::milliseconds freed{};
  const auto give_up = scaled(limit + 2s);
  while (since(frozen_at) < give_up) {
    if (rival_gets_it()) {
      freed = since(frozen_at);
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  std::printf("[ info ] %s: holder told %lld ms after the freeze; server freed the lock %s%lld ms (limit %lld s)\n",
              GetParam().name.c_str(), static_cast<long long>(told.count()), freed.count() ? "after " : "not within ",
              static_cast<long long>((freed.count() ? freed : give_up).count()), static_cast<long long>(limit.count()));
  ASSERT_GT(freed.count(), 0) << "wait_timeout ended the silent session";
  EXPECT_GT(freed, told) << "never before the holder's own verdict: two holders otherwise";
  EXPECT_LE(freed, scaled(limit + 1s)) << "within the limit after the last packet";
  named->unlock();
  proxy.thaw();
  std::this_thread::sleep_for(100ms);
}

// MariaDB's wait_timeout would end an idle pooled connection too: the pool never hands out a
// connection with a session lock's short value (the session registry keeps such connections for
// its next pin). (PostgreSQL's keepalive settings stay: harmless while the process lives, since
// its kernel answers the probes, and every pin sets its own.)
TEST_P(SessionLockNetlossTest, ThePoolNeverHandsOutANamedLocksShortWaitTimeout) {
  if (GetParam().dialect != dialect_kind::mysql) GTEST_SKIP() << "MySQL/MariaDB only";
  database_options o;
  o.pool_size = 1;  // the statements below reuse the lock's connection
  const database db = open(o);
  named_lock lock(db, unique_name("pooled"));
  lock.lock();
  lock.unlock();
  EXPECT_EQ(scalar(db, "SELECT @@SESSION.wait_timeout"), scalar(db, "SELECT @@GLOBAL.wait_timeout"));
}

// A grant read long after the server sent it may name a session the server has ended since: a
// holder stopped right after the grant is silent, and MariaDB ends a session silent for its
// dead-peer limit (wait_timeout, 3 s for this keepalive), freeing the lock. Here the grant waits
// in a frozen proxy instead of a stopped process; when it arrives, another session holds the lock.
// The acquire must check its session before it counts the lock as held.
TEST_P(SessionLockNetlossTest, AGrantReadPastTheServersDeadPeerLimitCountsOnlyIfTheSessionStillAnswers) {
  if (GetParam().dialect != dialect_kind::mysql)
    GTEST_SKIP() << "MySQL/MariaDB only: PostgreSQL keeps a silent session while the client's kernel answers";
  tcp_proxy proxy(GetParam().uri);
  const database through(proxy.uri());
  const database direct = open();
  const std::string name = unique_name("late_grant");
  named_lock holder(direct, name);
  holder.lock();
  session_lock_options o;
  o.keepalive = kKeepalive;
  named_lock waiter(through, name, o);
  std::atomic<int> got{-1};
  std::jthread waiting([&] { got = waiter.try_lock_for(scaled(8s)) ? 1 : 0; });
  std::this_thread::sleep_for(500ms);  // the waiter's GET_LOCK waits on the server
  proxy.freeze();
  holder.unlock();  // granted to the waiter's session; the answer waits in the proxy
  std::this_thread::sleep_for(detail::server_dead_peer_limit(kKeepalive) + 1500ms);
  named_lock rival(direct, name);
  ASSERT_TRUE(rival.try_lock_for(2s)) << "the server did not end the silent session and free its lock";
  proxy.thaw();
  waiting.join();
  EXPECT_EQ(got.load(), 0) << "the waiter reported holding a lock the server had given to another session";
  EXPECT_FALSE(waiter.holds());
  EXPECT_TRUE(rival.holds());
}

// The same for a session an administrator ends while the grant is on its way: the server frees
// the lock at once and another session takes it. The grant arrives a keepalive period or more
// after the attempt began (the session went unwatched that long), so it counts only once a ping
// reaches the session: it does not, and the waiter goes on waiting, on a new session.
template <class Lock>
void grant_of_a_session_ended_on_its_way(const database& direct, const std::string& uri, const std::string& session_id,
                                         const std::string& session_waits) {
  tcp_proxy proxy(uri);
  database_options one;
  one.pool_size = 1;  // the waiter's session is on the connection whose id is read here
  const database through(proxy.uri(), one);
  const auto id = sql(through, session_id);
  const std::string session = id.rows.at(0).at(0).value();
  const std::string name = unique_name("ended_grant");
  session_lock_options o;
  o.keepalive = kKeepalive;
  Lock holder(direct, name);
  holder.lock();
  std::atomic<int> got{-1};
  std::atomic<bool> rival_holds{false}, alongside{false};
  std::jthread waiting([&] {
    Lock waiter(through, name, o);
    // PostgreSQL's client reads the end of the session with the grant: the attempt fails, and the
    // waiter tries again, on a new session.
    for (int errors = 0; errors < 3; ++errors) {
      try {
        const bool held = waiter.try_lock_for(scaled(8s));
        alongside = held && rival_holds.load();
        got = held ? 1 : 0;
        return;
      } catch (const connection_error&) {
      }
    }
  });
  bool waits = false;
  for (const auto give_up = clock_type::now() + 5s; !waits && clock_type::now() < give_up;) {
    std::this_thread::sleep_for(20ms);
    waits = !sql(direct, session_waits, {std::stoll(session)}).rows.empty();
  }
  ASSERT_TRUE(waits) << "the waiter's statement never waited on the server";
  std::this_thread::sleep_for(kKeepalive);  // the grant is read a keepalive period after the attempt began
  proxy.freeze();
  holder.unlock();  // granted to the waiter's session; the answer waits in the proxy
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(kill_session(direct, std::stoll(session)));
  Lock rival(direct, name);
  ASSERT_TRUE(rival.try_lock_for(2s)) << "the server did not free the ended session's lock";
  rival_holds = true;
  proxy.thaw();
  std::this_thread::sleep_for(scaled(kKeepalive + 500ms));
  rival_holds = false;
  rival.unlock();
  waiting.join();
  EXPECT_FALSE(alongside.load()) << "the waiter reported holding a lock the server had given to another session";
  EXPECT_EQ(got.load(), 1) << "once the rival let go, the waiter took it on a new session";
}

TEST_P(SessionLockNetlossTest, AGrantWhoseSessionWasEndedOnItsWayDoesNotCount) {
  const database direct = open();
  if (GetParam().dialect == dialect_kind::postgresql)
    grant_of_a_session_ended_on_its_way<advisory_lock>(
        direct, GetParam().uri, "SELECT pg_backend_pid()",
        "SELECT 1 FROM pg_locks WHERE pid = CAST($1 AS integer) AND locktype = 'advisory' AND NOT granted");
  else
    grant_of_a_session_ended_on_its_way<named_lock>(
        direct, GetParam().uri, "SELECT CONNECTION_ID()",
        "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = $1 AND INFO LIKE '%GET_LOCK%'");
}

// PostgreSQL keeps the settings on the pooled connection (set once, not on every lock); a session
// whose keepalive asks for another limit sets its own on the same connection.
TEST_P(SessionLockNetlossTest, APooledConnectionGetsTheLimitOfEachSessionsKeepalive) {
  if (GetParam().dialect != dialect_kind::postgresql) GTEST_SKIP() << "PostgreSQL only";
  database_options o;
  o.pool_size = 1;  // every session below is on the same connection
  const database db = open(o);
  auto user_timeout_after_a_hold = [&](std::chrono::milliseconds keepalive) {
    session_lock_options so;
    so.keepalive = keepalive;
    advisory_lock lock(db, unique_name("kept"), so);
    lock.lock();
    lock.unlock();
    return scalar(db, "SHOW tcp_user_timeout");
  };
  EXPECT_EQ(user_timeout_after_a_hold(300ms), "3000");
  EXPECT_EQ(user_timeout_after_a_hold(300ms), "3000");
  EXPECT_EQ(user_timeout_after_a_hold(5s), "12000") << "2 x 5 s + 2 s";
  EXPECT_EQ(user_timeout_after_a_hold(300ms), "3000") << "set again, never left longer or shorter";
}

INSTANTIATE_TEST_SUITE_P(Servers, SessionLockNetlossTest, ::testing::ValuesIn(targets_of(dialect_kind::sqlite, true)),
                         [](const auto& info) { return info.param.name; });

// with_advisory_xact_lock (PostgreSQL only): the function learns of the loss through its
// stop_token, and the call reports lock_lost without waiting on the hung connection.
class AdvisoryXactNetlossTest : public SessionLockNetlossTest {};

TEST_P(AdvisoryXactNetlossTest, AnXactLockWhoseConnectionFreezesReportsLockLost) {
  tcp_proxy proxy(GetParam().uri);
  const database through(proxy.uri());
  advisory_xact_options o;
  o.keepalive = kKeepalive;
  clock_type::time_point frozen_at;
  std::chrono::milliseconds noticed{};
  EXPECT_THROW(with_advisory_xact_lock(
                   through, unique_name("netloss-xact"),
                   [&](std::stop_token token) {
                     proxy.freeze();
                     frozen_at = clock_type::now();
                     noticed = time_until([&] { return token.stop_requested(); }, kGiveUp);
                   },
                   o),
               lock_lost);
  EXPECT_LE(noticed, kLostBound) << "the function's stop_token fires within keepalive + 1 s";
  EXPECT_LE(since(frozen_at), noticed + kUnlockBound) << "the call returns at once after the function";
  proxy.thaw();
  std::this_thread::sleep_for(100ms);
}

INSTANTIATE_TEST_SUITE_P(PostgreSQL, AdvisoryXactNetlossTest, ::testing::ValuesIn(targets_of(dialect_kind::postgresql)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
