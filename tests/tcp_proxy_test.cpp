// support/tcp_proxy against an echo server on a loopback port (no database): it forwards at once
// by default, holds each direction for its delay, holds every chunk for a stall that is certain,
// and a partition freezes connections made after it too, until thaw().
#include "support/tcp_proxy.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// A round trip that nothing holds up: well under the holds below, stretched in sanitizer builds.
const auto kPrompt = scaled(100ms);

// Echoes every byte back on every connection it accepts, until destroyed.
class echo_server {
 public:
  echo_server() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("echo_server: cannot listen");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~echo_server() {
    stop_ = true;
    thread_.join();
    for (const int fd : clients_) ::close(fd);
    ::close(listener_);
  }
  std::string uri() const { return "tcp://127.0.0.1:" + std::to_string(port_) + "/"; }

 private:
  void run() {
    while (!stop_) {
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (const int fd : clients_) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) clients_.push_back(::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC));
      for (std::size_t k = 1; k < fds.size(); ++k) {
        if (!fds[k].revents) continue;
        char buffer[4096];
        const ssize_t n = ::recv(fds[k].fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0) (void)!::send(fds[k].fd, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL);
      }
    }
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> clients_;
  std::thread thread_;
};

// A client connection to the proxy.
class client {
 public:
  explicit client(const tcp_proxy& proxy) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(proxy.port()));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("cannot connect");
  }
  ~client() { ::close(fd_); }

  // Sends `text` and waits up to `limit` for it to come back; the round trip's time, or nullopt.
  std::optional<clock_type::duration> round_trip(const std::string& text, clock_type::duration limit) {
    const auto start = clock_type::now();
    if (::send(fd_, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size())) return std::nullopt;
    std::string got;
    while (got.size() < text.size()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(limit - (clock_type::now() - start)).count();
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return std::nullopt;
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) return std::nullopt;
      got.append(buffer, static_cast<std::size_t>(n));
    }
    return clock_type::now() - start;
  }

 private:
  int fd_;
};

TEST(TcpProxyTest, ForwardsBothWaysWithoutAHoldByDefault) {
  echo_server echo;
  tcp_proxy proxy(echo.uri());
  client c(proxy);
  const auto rtt = c.round_trip("ping", 2s);
  ASSERT_TRUE(rtt);
  EXPECT_LT(*rtt, kPrompt);
}

TEST(TcpProxyTest, ADelayHoldsEachDirectionForItsTime) {
  echo_server echo;
  tcp_proxy proxy(echo.uri());
  client c(proxy);
  proxy.set_delay(120ms, 60ms);
  const auto rtt = c.round_trip("ping", 2s);
  ASSERT_TRUE(rtt);
  EXPECT_GE(*rtt, 180ms);
  proxy.set_delay(0ms, 0ms);
  const auto after = c.round_trip("pong", 2s);
  ASSERT_TRUE(after);
  EXPECT_LT(*after, kPrompt);
}

TEST(TcpProxyTest, ACertainStallHoldsEveryChunkEachWay) {
  echo_server echo;
  tcp_proxy proxy(echo.uri());
  client c(proxy);
  proxy.set_stalls(1.0, 100ms);
  const auto rtt = c.round_trip("ping", 2s);
  ASSERT_TRUE(rtt);
  EXPECT_GE(*rtt, 200ms);
}

TEST(TcpProxyTest, APartitionFreezesConnectionsMadeAfterItUntilThaw) {
  echo_server echo;
  tcp_proxy proxy(echo.uri());
  client before(proxy);
  ASSERT_TRUE(before.round_trip("a", 2s));
  proxy.partition();
  client after(proxy);  // the connect succeeds locally; nothing passes
  EXPECT_FALSE(before.round_trip("b", 300ms));
  EXPECT_FALSE(after.round_trip("c", 300ms));
  proxy.thaw();
  // The queued bytes come first, then the new ones.
  EXPECT_TRUE(before.round_trip("d", 2s));
  EXPECT_TRUE(after.round_trip("e", 2s));
}

}  // namespace
}  // namespace sqllock::test
