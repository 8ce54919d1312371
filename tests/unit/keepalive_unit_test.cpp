// The session keepalive on a fake clock and a scripted server: a ping every keepalive period while
// a session holds locks, the 800 ms verdict on a ping that gets no answer, and the reprieve for a
// keepalive thread that woke late. No server; each test takes milliseconds of real time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "core/session/pinned_session.hpp"
#include "core/session/session_lock.hpp"
#include "dialect/session_lock_sql.hpp"
#include "sqllock/error.hpp"
#include "unit/fake_handle.hpp"
#include "unit/gate.hpp"

namespace test {
namespace {

using namespace std::chrono_literals;

// A lock kind whose statements are "LOCK" and "UNLOCK": the keepalive does not care which.
class fake_protocol final : public d::session_lock_protocol {
 public:
  bool acquire(d::connection& conn, d::lock_mode, std::optional<std::chrono::steady_clock::time_point>, std::stop_token,
               attempt& state) override {
    conn.exec_direct("LOCK");
    state.answered = true;
    return true;
  }
  bool release(d::connection& conn, d::lock_mode) override {
    conn.exec_direct("UNLOCK");
    return true;
  }
  const std::string& description() const noexcept override { return description_; }

 private:
  const std::string description_ = "fake lock 'job'";
};

struct session_fixture {
  explicit session_fixture(std::chrono::milliseconds keepalive) {
    h.server->on("LOCK", rows({}));
    h.server->on("UNLOCK", rows({}));
    h.server->on(dead_peer_limit().set, rows({}));
    sqllock::session_lock_options o;
    o.keepalive = keepalive;
    o.on_lost = [this] {
      lost_at = h.clock->now();
      lost = true;
    };
    o.on_unlock_error = [](const std::exception&) {};
    lock = std::make_unique<d::session_lock>(h.db, std::make_unique<fake_protocol>(), o);
  }
  // The statement that sets the server's own dead-peer limit on the session.
  d::dead_peer_limit_sql dead_peer_limit() const {
    return *d::dead_peer_limit_statements(h.impl.spec(), std::chrono::seconds(1));
  }
  // Takes the lock; returns when (fake time) the keepalive period started.
  fake_clock::time_point take() {
    const auto at = h.clock->now();
    EXPECT_TRUE(lock->acquire(d::lock_mode::exclusive, std::nullopt));
    return at;
  }
  const std::string& ping() const { return d::keepalive_statement(h.impl.dialect()); }
  // Takes the lock with pings that hang until `network` opens; returns when (fake time) the first
  // ping was sent, once the keepalive thread has seen it running.
  fake_clock::time_point hang_pings(std::shared_ptr<gate> network) {
    // The gate is shared: a written-off pinger may still be leaving it when the test ends.
    h.server->on(ping(), [network](std::span<const d::value>) {
      network->wait();
      return rows({{"1"}});
    });
    const auto start = take();
    h.clock->advance(100ms, 100ms);
    EXPECT_TRUE(h.server->await(ping(), 1));
    std::this_thread::sleep_for(20ms);  // the keepalive thread plans its verdict for sent + 800 ms
    return start + 100ms;
  }

  fake_handle h;
  std::atomic<bool> lost{false};
  std::atomic<fake_clock::time_point> lost_at{};
  std::unique_ptr<d::session_lock> lock;
};

TEST(KeepaliveUnitTest, PingsEveryKeepalivePeriodWhileLocksAreHeld) {
  session_fixture f(100ms);
  f.h.server->on(f.ping(), rows({{"1"}}));
  f.take();
  f.h.clock->advance(90ms);
  EXPECT_EQ(f.h.server->count(f.ping()), 0u) << "pinged before the period ended";
  f.h.clock->advance(1010ms);
  // Ten periods: ten pings, fewer when a starved pinger answers late (the next period starts at its
  // answer), never more.
  const auto pings = f.h.server->count(f.ping());
  EXPECT_GE(pings, 7u);
  EXPECT_LE(pings, 11u);
  EXPECT_FALSE(f.lost);
  f.lock->release(d::lock_mode::exclusive);
  f.h.clock->advance(500ms);
  EXPECT_EQ(f.h.server->count(f.ping()), pings) << "a session that holds nothing is still pinged";
}

TEST(KeepaliveUnitTest, AFailedPingLosesTheSessionAtOnce) {
  session_fixture f(100ms);
  f.h.server->fail(f.ping(), [] { throw sqllock::connection_error("fake: session killed"); });
  const auto start = f.take();
  const auto token = f.lock->lost_token();
  f.h.clock->advance(110ms);
  ASSERT_TRUE(eventually([&] { return f.lost.load(); }));
  EXPECT_LE(f.lost_at.load(), start + 110ms);
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(f.lock->holds(d::lock_mode::exclusive));
  EXPECT_THROW(f.lock->release(d::lock_mode::exclusive), sqllock::not_held);
}

// A ping that gets no answer (packets dropped, server frozen) is a dead session 800 ms after it
// was sent — not before: a loaded machine can delay a live server's answer by a few hundred ms.
TEST(KeepaliveUnitTest, AnUnansweredPingLosesTheSession800msAfterItWasSent) {
  session_fixture f(100ms);
  const auto network = std::make_shared<gate>();
  const auto sent = f.hang_pings(network);
  f.h.clock->advance(790ms, 790ms);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(f.lost) << "declared lost 790 ms after the ping was sent";
  EXPECT_TRUE(f.lock->holds(d::lock_mode::exclusive));
  f.h.clock->advance(20ms, 20ms);
  ASSERT_TRUE(eventually([&] { return f.lost.load(); })) << "no verdict on a ping unanswered for 810 ms";
  EXPECT_GE(f.lost_at.load(), sent + 800ms);
  EXPECT_FALSE(f.lock->holds(d::lock_mode::exclusive));
  network->open();  // the written-off pinger returns and closes the connection
}

// A keepalive thread that wakes over 50 ms late was not running (SIGSTOP, starvation): the answer
// of an overdue ping may be waiting in its socket, so the ping gets 250 ms more, once.
TEST(KeepaliveUnitTest, APingFoundOverdueByALateKeepaliveGets250msMoreOnce) {
  session_fixture f(100ms);
  const auto network = std::make_shared<gate>();
  const auto sent = f.hang_pings(network);
  f.h.clock->advance(900ms, 900ms);   // it wakes 100 ms past that
  std::this_thread::sleep_for(50ms);  // many early (fake) wakes: they must not end the reprieve
  EXPECT_FALSE(f.lost) << "no reprieve for a keepalive thread that woke late";
  f.h.clock->advance(240ms, 240ms);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(f.lost) << "the reprieve ended early";
  f.h.clock->advance(20ms, 20ms);
  ASSERT_TRUE(eventually([&] { return f.lost.load(); })) << "the reprieve never ended";
  EXPECT_GE(f.lost_at.load(), sent + 900ms + 250ms);
  network->open();
}

// The server ends a silent session by its own clock only after the holder's verdict: the limit
// sent on the session is 2 × keepalive + 2 s, in whole seconds (300 ms: 3 s).
TEST(KeepaliveUnitTest, TheSessionAsksTheServerToEndItOnlyAfterTheHoldersOwnVerdict) {
  session_fixture f(300ms);
  f.take();
  std::vector<std::string> sent;
  for (const auto& c : f.h.server->calls())
    if (c.sql == f.dead_peer_limit().set)
      for (const auto& v : c.params) sent.push_back(std::to_string(std::get<std::int64_t>(v)));
  // PostgreSQL: keepalive idle (limit - 3 probes of 1 s, at least 1), interval, count, user timeout.
  EXPECT_EQ(sent, (std::vector<std::string>{"1", "1", "3", "3000"}));
}

}  // namespace
}  // namespace test
