// Redis as the usual alternative to a database lock: SET key token NX PX 30000 to acquire, a Lua
// compare-and-delete to release (the pattern Redis documents for a single-instance lock), over
// one TCP connection per thread, measured by the same loop as sqllock's cases.
// Named peer.redis.cycle_t<threads>; needs SQLLOCK_BENCH_REDIS=host:port (scripts/bench.sh).
//
// peer.redis_semaphore.cycle_t<threads>: a counting semaphore the way Redisson's RSemaphore
// builds one — a counter of free permits set once (trySetPermits), a Lua script that takes one
// when the counter is above zero, and a release script that adds one back and publishes to the
// semaphore's channel for waiters. Written here from that description. It has no owner and no
// lease: any client may release, and a holder that dies never gives its permit back.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/harness.hpp"

namespace sqllock::bench {
namespace {

// Just enough RESP for commands whose replies are one line (+OK, :1, $-1 …).
class redis_client {
 public:
  redis_client(const std::string& host, int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
      throw std::runtime_error("cannot connect to redis at " + host + ":" + std::to_string(port));
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~redis_client() { ::close(fd_); }
  redis_client(const redis_client&) = delete;
  redis_client& operator=(const redis_client&) = delete;

  // Sends one command and returns its reply's first line (without CRLF).
  std::string call(const std::vector<std::string>& args) {
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    for (std::size_t sent = 0; sent < out.size();) {
      const auto n = ::send(fd_, out.data() + sent, out.size() - sent, 0);
      if (n <= 0) throw std::runtime_error("redis send failed");
      sent += static_cast<std::size_t>(n);
    }
    std::string line;
    char c;
    while (true) {
      if (::recv(fd_, &c, 1, 0) != 1) throw std::runtime_error("redis connection closed");
      if (c == '\n') break;
      if (c != '\r') line += c;
    }
    if (!line.empty() && line[0] == '-') throw std::runtime_error("redis error: " + line);
    return line;
  }

 private:
  int fd_ = -1;
};

constexpr const char* kRelease =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

// One connection per thread to SQLLOCK_BENCH_REDIS.
std::vector<std::unique_ptr<redis_client>> connect(int threads) {
  const char* where = std::getenv("SQLLOCK_BENCH_REDIS");
  if (where == nullptr || *where == '\0') throw std::runtime_error("SQLLOCK_BENCH_REDIS (host:port) is not set");
  const std::string hp = where;
  const auto colon = hp.rfind(':');
  std::vector<std::unique_ptr<redis_client>> clients;
  for (int t = 0; t < threads; ++t)
    clients.push_back(std::make_unique<redis_client>(hp.substr(0, colon), std::stoi(hp.substr(colon + 1))));
  return clients;
}

void cycles(benchmark::State& state, int threads) {
  auto clients = connect(threads);
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string key = "lock:bench-cycle-" + std::to_string(t);
    const std::string token = "owner-" + std::to_string(t);
    if (c.call({"SET", key, token, "NX", "PX", "30000"}) != "+OK") throw std::runtime_error("redis SET NX refused");
    if (c.call({"EVAL", kRelease, "1", key, token}) != ":1") throw std::runtime_error("redis release failed");
  });
}

// KEYS[1] the free-permit counter, ARGV[1] how many to take: 1 when taken, 0 when too few are free.
constexpr const char* kSemaphoreAcquire =
    "local free = tonumber(redis.call('get', KEYS[1]) or '0') "
    "if free >= tonumber(ARGV[1]) then redis.call('decrby', KEYS[1], ARGV[1]) return 1 end return 0";
// KEYS[1] the counter, KEYS[2] the channel waiters listen on, ARGV[1] how many to give back.
constexpr const char* kSemaphoreRelease =
    "local free = redis.call('incrby', KEYS[1], ARGV[1]) redis.call('publish', KEYS[2], free) return free";

// A semaphore of 4 permits per thread (no contention), as sqllock.semaphore.<db>.cycle_t<n>.
void semaphore_cycles(benchmark::State& state, int threads) {
  auto clients = connect(threads);
  for (int t = 0; t < threads; ++t)
    clients[static_cast<std::size_t>(t)]->call({"SET", "semaphore:bench-" + std::to_string(t), "4"});
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string key = "semaphore:bench-" + std::to_string(t);
    const std::string channel = "semaphore-channel:bench-" + std::to_string(t);
    if (c.call({"EVAL", kSemaphoreAcquire, "1", key, "1"}) != ":1") throw std::runtime_error("redis semaphore refused");
    c.call({"EVAL", kSemaphoreRelease, "2", key, channel, "1"});
  });
}

[[maybe_unused]] const bool registered = [] {
  for (const int threads : {1, 8}) {
    add_case("peer.redis.cycle_t" + std::to_string(threads), [threads](benchmark::State& s) { cycles(s, threads); });
    add_case("peer.redis_semaphore.cycle_t" + std::to_string(threads),
             [threads](benchmark::State& s) { semaphore_cycles(s, threads); });
  }
  return true;
}();

}  // namespace
}  // namespace sqllock::bench
