#include "support/tcp_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <system_error>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sqllock::test {
namespace {

[[noreturn]] void fail(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

// Writes all of `data` to a blocking socket; false when the peer is gone.
bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// A TCP connection to host:port (numeric or a name).
int connect_to(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    throw std::system_error(EHOSTUNREACH, std::generic_category(), "resolving " + host);
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

}  // namespace

struct tcp_proxy::state {
  using clock = std::chrono::steady_clock;

  // Bytes read from one side and not yet written to the other; an empty `bytes` with `end` set
  // stands for that side having closed.
  struct chunk {
    clock::time_point due;
    std::string bytes;
    bool end = false;
  };

  // One accepted connection: the client's socket and ours to the server, and what waits to be
  // forwarded each way (only while a delay or stalls are set).
  struct link {
    int client = -1;
    int server = -1;
    bool frozen = false;
    std::deque<chunk> to_server, to_client;
    bool client_ended = false, server_ended = false;  // that side closed; its end is queued
    bool open() const { return client >= 0; }
    void close() {
      if (!open()) return;
      ::close(client);
      ::close(server);
      client = server = -1;
      to_server.clear();
      to_client.clear();
    }
  };

  std::string host;
  int target_port = 0;
  std::string uri;
  int port = 0;
  int listener = -1;
  int wake[2] = {-1, -1};  // a byte on wake[1] makes the thread re-read the links
  mutable std::mutex mu;   // guards everything below; held while a chunk is forwarded
  std::vector<link> links;
  bool stopping = false;
  bool partitioned = false;  // new links start frozen
  clock::duration delay_to_server{}, delay_to_client{};
  double stall_chance = 0;
  clock::duration stall{};
  std::mt19937_64 rng{std::random_device{}()};
  std::thread thread;

  void poke() const {
    const char b = 0;
    (void)!::write(wake[1], &b, 1);
  }

  // When a chunk read now toward the server (or the client) may be passed on: after the
  // direction's delay, maybe a stall, and never before the chunk ahead of it.
  clock::time_point due(const std::deque<chunk>& queue, bool to_server) {
    auto at = clock::now() + (to_server ? delay_to_server : delay_to_client);
    if (stall_chance > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < stall_chance) at += stall;
    if (!queue.empty()) at = std::max(at, queue.back().due);
    return at;
  }

  // Moves one chunk from `from` to `to` of links[i] (or queues it); closes the link when either
  // side is done.
  void forward(std::size_t i, bool from_client) {
    auto& l = links[i];
    char buffer[65536];
    const int from = from_client ? l.client : l.server;
    const ssize_t n = ::recv(from, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    auto& queue = from_client ? l.to_server : l.to_client;
    const auto at = due(queue, from_client);
    if (queue.empty() && at <= clock::now()) {
      if (n <= 0 || !write_all(from_client ? l.server : l.client, buffer, static_cast<std::size_t>(n))) l.close();
      return;
    }
    if (n <= 0) {
      queue.push_back({at, {}, true});
      (from_client ? l.client_ended : l.server_ended) = true;
      return;
    }
    queue.push_back({at, std::string(buffer, static_cast<std::size_t>(n)), false});
  }

  // Passes on the queued chunks of links[i] that are due.
  void flush(std::size_t i, clock::time_point now) {
    auto& l = links[i];
    for (const bool to_server : {true, false}) {
      auto& queue = to_server ? l.to_server : l.to_client;
      while (l.open() && !queue.empty() && queue.front().due <= now) {
        const chunk c = std::move(queue.front());
        queue.pop_front();
        if (c.end || !write_all(to_server ? l.server : l.client, c.bytes.data(), c.bytes.size())) l.close();
      }
    }
  }

  void accept_one() {
    const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return;
    const int server = connect_to(host, target_port);
    if (server < 0) {
      ::close(client);  // the client sees its connection refused-ish: closed at once
      return;
    }
    link l;
    l.client = client;
    l.server = server;
    l.frozen = partitioned;
    links.push_back(std::move(l));
  }

  void run() {
    std::unique_lock lock(mu);
    while (!stopping) {
      // Which fd of the poll set belongs to which link and side.
      std::vector<pollfd> fds{{wake[0], POLLIN, 0}, {listener, POLLIN, 0}};
      std::vector<std::pair<std::size_t, bool>> owners;
      std::optional<clock::time_point> next_due;
      for (std::size_t i = 0; i < links.size(); ++i) {
        const auto& l = links[i];
        if (!l.open() || l.frozen) continue;
        if (!l.client_ended) {
          fds.push_back({l.client, POLLIN, 0});
          owners.emplace_back(i, true);
        }
        if (!l.server_ended) {
          fds.push_back({l.server, POLLIN, 0});
          owners.emplace_back(i, false);
        }
        for (const auto* queue : {&l.to_server, &l.to_client})
          if (!queue->empty() && (!next_due || queue->front().due < *next_due)) next_due = queue->front().due;
      }
      int timeout_ms = -1;
      if (next_due) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next_due - clock::now()).count();
        timeout_ms = static_cast<int>(std::clamp<std::int64_t>(left, 0, 60'000));
      }
      lock.unlock();
      const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
      lock.lock();
      if (ready < 0) continue;  // EINTR
      if (fds[0].revents) {
        char drain[64];
        while (::read(wake[0], drain, sizeof drain) > 0) {
        }
      }
      if (fds[1].revents & POLLIN) accept_one();
      for (std::size_t k = 2; k < fds.size(); ++k) {
        if (!fds[k].revents) continue;
        const auto [i, from_client] = owners[k - 2];
        // Frozen or cut while this thread polled: leave it alone.
        if (!links[i].open() || links[i].frozen) continue;
        forward(i, from_client);
      }
      const auto now = clock::now();
      for (std::size_t i = 0; i < links.size(); ++i)
        if (links[i].open() && !links[i].frozen) flush(i, now);
    }
  }
};

tcp_proxy::tcp_proxy(const std::string& server_uri) : state_(std::make_unique<state>()) {
  auto& s = *state_;
  // scheme://[user[:password]@]host:port[/…]: the authority is between "://" and the next '/'.
  const auto start = server_uri.find("://");
  if (start == std::string::npos) throw std::invalid_argument("tcp_proxy: not a URI: " + server_uri);
  const auto authority_end = std::min(server_uri.find('/', start + 3), server_uri.size());
  const auto at = server_uri.rfind('@', authority_end);
  const auto host_start = (at == std::string::npos || at < start) ? start + 3 : at + 1;
  const auto colon = server_uri.rfind(':', authority_end);
  if (colon == std::string::npos || colon < host_start)
    throw std::invalid_argument("tcp_proxy: the URI has no port: " + server_uri);
  s.host = server_uri.substr(host_start, colon - host_start);
  s.target_port = std::stoi(server_uri.substr(colon + 1, authority_end - colon - 1));

  s.listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s.listener < 0) fail("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // port 0: the kernel picks a free one
  socklen_t len = sizeof a;
  if (::bind(s.listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s.listener, 64) != 0 ||
      ::getsockname(s.listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int e = errno;
    ::close(s.listener);
    throw std::system_error(e, std::generic_category(), "tcp_proxy: listening on a loopback port");
  }
  s.port = ntohs(a.sin_port);
  s.uri = server_uri.substr(0, host_start) + "127.0.0.1:" + std::to_string(s.port) + server_uri.substr(authority_end);
  if (::pipe2(s.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int e = errno;
    ::close(s.listener);
    throw std::system_error(e, std::generic_category(), "tcp_proxy: pipe");
  }
  s.thread = std::thread([&s] { s.run(); });
}

tcp_proxy::~tcp_proxy() {
  auto& s = *state_;
  {
    std::lock_guard lock(s.mu);
    s.stopping = true;
  }
  s.poke();
  s.thread.join();
  for (auto& l : s.links) l.close();
  ::close(s.listener);
  ::close(s.wake[0]);
  ::close(s.wake[1]);
}

const std::string& tcp_proxy::uri() const { return state_->uri; }
int tcp_proxy::port() const { return state_->port; }

std::size_t tcp_proxy::accepted() const {
  std::lock_guard lock(state_->mu);
  return state_->links.size();
}

void tcp_proxy::freeze() {
  std::lock_guard lock(state_->mu);
  for (auto& l : state_->links) l.frozen = true;
  state_->poke();  // drop them from the poll set
}

void tcp_proxy::partition() {
  std::lock_guard lock(state_->mu);
  state_->partitioned = true;
  for (auto& l : state_->links) l.frozen = true;
  state_->poke();
}

void tcp_proxy::thaw() {
  std::lock_guard lock(state_->mu);
  state_->partitioned = false;
  for (auto& l : state_->links) l.frozen = false;
  state_->poke();
}

void tcp_proxy::cut(std::size_t index) {
  std::lock_guard lock(state_->mu);
  if (index < state_->links.size()) state_->links[index].close();
  state_->poke();
}

void tcp_proxy::set_delay(std::chrono::milliseconds to_server, std::chrono::milliseconds to_client) {
  std::lock_guard lock(state_->mu);
  state_->delay_to_server = to_server;
  state_->delay_to_client = to_client;
}

void tcp_proxy::set_stalls(double chance, std::chrono::milliseconds stall) {
  std::lock_guard lock(state_->mu);
  state_->stall_chance = chance;
  state_->stall = stall;
}

}  // namespace sqllock::test
