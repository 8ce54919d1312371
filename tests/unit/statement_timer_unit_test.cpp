// The statement timer (driver/statement_timer.hpp) and the bounds of a statement
// (driver/statement_bound.hpp) on explicit times: fire_due() is called with the "now" the test
// chooses, so no test waits. Sockets are real socketpairs, so a shutdown is seen as a peer would.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "driver/statement_bound.hpp"
#include "driver/statement_timer.hpp"
#include "sqllock/statement_deadline.hpp"

namespace sqllock::detail {
namespace {

using namespace std::chrono_literals;
using clock_type = statement_timer::clock;

// Both ends of a connected socket pair, closed at the end of the test.
struct socket_pair {
  int client = -1;
  int server = -1;
  socket_pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    client = fds[0];
    server = fds[1];
  }
  ~socket_pair() {
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
  }
  // Whether the client end still carries a byte from the server end.
  bool carries() const {
    char c = 'x';
    if (::send(server, &c, 1, MSG_NOSIGNAL) != 1) return false;
    return ::recv(client, &c, 1, MSG_DONTWAIT) == 1;
  }
  // Whether a read on the client end returns at once with end-of-file (what a blocked read sees
  // when the timer shuts the socket down).
  bool client_reads_eof() const {
    char c;
    return ::recv(client, &c, 1, MSG_DONTWAIT) == 0;
  }
};

TEST(StatementTimer, ShutsDownTheSocketOnlyOnceItsDeadlinePassed) {
  statement_timer timer;
  socket_pair s;
  const auto t0 = clock_type::now();
  auto ticket = timer.arm(s.client, t0 + 100ms);
  ASSERT_TRUE(ticket.armed());
  EXPECT_EQ(timer.fire_due(t0 + 50ms), t0 + 100ms) << "the next deadline is reported";
  EXPECT_FALSE(s.client_reads_eof());
  EXPECT_TRUE(s.carries()) << "nothing happens before the deadline";
  EXPECT_EQ(timer.fire_due(t0 + 100ms), clock_type::time_point::max());
  EXPECT_TRUE(s.client_reads_eof()) << "a blocked read returns at once";
  EXPECT_TRUE(ticket.disarm()) << "disarm tells that the deadline fired";
  EXPECT_FALSE(ticket.disarm()) << "a second disarm is a no-op";
  EXPECT_EQ(timer.armed_count(), 0u);
}

TEST(StatementTimer, DisarmedInTimeLeavesTheSocketAlone) {
  statement_timer timer;
  socket_pair s;
  const auto t0 = clock_type::now();
  {
    auto ticket = timer.arm(s.client, t0 + 100ms);
    EXPECT_FALSE(ticket.disarm());
  }
  {
    auto dropped = timer.arm(s.client, t0 + 100ms);  // disarmed by its destructor
  }
  timer.fire_due(t0 + 1s);
  EXPECT_TRUE(s.carries());
  EXPECT_EQ(timer.armed_count(), 0u);
}

TEST(StatementTimer, NeverTouchesADescriptorNumberReusedAfterTheLibraryClosedIt) {
  statement_timer timer;
  std::optional<socket_pair> first(std::in_place);
  const int number = first->client;
  const auto t0 = clock_type::now();
  auto ticket = timer.arm(number, t0 + 100ms);
  // The client library closes its descriptor inside the call (libpq and libmariadb do on errors),
  // and another thread's new socket gets the same number.
  ::close(first->client);
  first->client = -1;
  socket_pair second;
  ::dup2(second.client, number);  // make sure the number is reused, whatever the allocator did
  timer.fire_due(t0 + 1s);
  char c = 'y';
  ASSERT_EQ(::send(second.server, &c, 1, MSG_NOSIGNAL), 1);
  EXPECT_EQ(::recv(number, &c, 1, MSG_DONTWAIT), 1) << "the socket now under that number still works";
  EXPECT_TRUE(ticket.disarm()) << "the timer fired on its own duplicate of the old socket";
  ::close(number);
}

TEST(StatementTimer, WatchesNothingWithoutASocketOrADeadline) {
  statement_timer timer;
  socket_pair s;
  EXPECT_FALSE(timer.arm(-1, clock_type::now()).armed());
  EXPECT_FALSE(timer.arm(s.client, clock_type::time_point::max()).armed());
  EXPECT_EQ(timer.armed_count(), 0u);
}

TEST(StatementTimer, TheProcessTimerCutsAStatementOffInRealTime) {
  socket_pair s;
  const auto start = clock_type::now();
  auto ticket = statement_timer::process().arm(s.client, start + 50ms);
  char c;
  // A blocking read, as a client library's: returns when the timer shuts the socket down.
  EXPECT_EQ(::recv(s.client, &c, 1, 0), 0);
  const auto took = clock_type::now() - start;
  EXPECT_GE(took, 50ms);
  EXPECT_LT(took, 2s);
  EXPECT_TRUE(ticket.disarm());
}

TEST(StatementBound, IsTheConnectionsBoundUnlessTheThreadSaysOtherwise) {
  const auto now = clock_type::now();
  auto d = deadline_of_statement(now, 10s);
  EXPECT_EQ(d.at, now + 10s);
  EXPECT_FALSE(d.by_caller);
  {
    const server_wait_scope waits(60s);
    EXPECT_EQ(deadline_of_statement(now, 10s).at, now + 70s) << "a server-side wait is added";
    {
      const statement_deadline caller(now + 3s);
      d = deadline_of_statement(now, 10s);
      EXPECT_EQ(d.at, now + 3s + kDeadlineGrace) << "a caller's nearer deadline wins, plus the grace";
      EXPECT_TRUE(d.by_caller);
      {
        const statement_deadline later(now + 30s);
        EXPECT_EQ(deadline_of_statement(now, 10s).at, now + 3s + kDeadlineGrace) << "the nearest deadline wins";
      }
    }
    EXPECT_EQ(deadline_of_statement(now, 10s).at, now + 70s) << "each scope restores what was before";
  }
  {
    const unbounded_statements_scope own;
    EXPECT_EQ(deadline_of_statement(now, 10s).at, clock_type::time_point::max());
    const statement_deadline caller(now + 3s);
    EXPECT_EQ(deadline_of_statement(now, 10s).at, now + 3s + kDeadlineGrace) << "a caller's deadline still applies";
  }
  {
    const auto before = clock_type::now();
    const statement_deadline passed(clock_type::time_point::min());
    const auto at = deadline_of_statement(clock_type::now(), 10s).at;
    EXPECT_GE(at, before + kDeadlineGrace) << "a deadline already passed leaves room for one attempt";
    EXPECT_LE(at, clock_type::now() + kDeadlineGrace);
  }
  {
    const statement_deadline forever(clock_type::time_point::max());
    EXPECT_EQ(deadline_of_statement(now, 10s).at, now + 10s) << "max() bounds nothing more";
  }
  EXPECT_EQ(deadline_of_statement(now, 10s).at, now + 10s);
}

}  // namespace
}  // namespace sqllock::detail
