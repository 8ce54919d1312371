#include "common/identity.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <random>

namespace sqllock::detail {
namespace {

// Bumped in every child of a fork, so per-thread caches know to refresh.
std::atomic<std::uint64_t> fork_generation{0};
std::atomic<pid_t> cached_pid{0};

void after_fork_in_child() noexcept {
  cached_pid.store(::getpid(), std::memory_order_relaxed);
  fork_generation.fetch_add(1, std::memory_order_relaxed);
}

// Registers the handler once, before the first cached value is handed out.
const bool fork_handler_registered = [] {
  cached_pid.store(::getpid(), std::memory_order_relaxed);
  return ::pthread_atfork(nullptr, nullptr, after_fork_in_child) == 0;
}();

struct thread_identity {
  std::uint64_t generation = ~std::uint64_t{0};
  std::int64_t tid = 0;
  std::string text;
};

thread_identity& this_thread_identity() noexcept {
  thread_local thread_identity id;
  const auto generation = fork_generation.load(std::memory_order_relaxed);
  if (id.generation != generation) {
    id.generation = generation;
    id.tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
    id.text.clear();  // rebuilt on demand: formatting could allocate, which noexcept callers avoid
  }
  return id;
}

}  // namespace

const std::string& host_name() {
  static const std::string name = [] {
    std::array<char, 256> buf{};
    if (::gethostname(buf.data(), buf.size() - 1) != 0 || buf[0] == '\0') return std::string("unknown-host");
    return std::string(buf.data());
  }();
  return name;
}

std::string random_token() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string out;
  out.reserve(32);
  for (int i = 0; i < 4; ++i) {
    std::uint32_t v = rd();
    for (int j = 0; j < 8; ++j, v >>= 4) out += kHex[v & 15];
  }
  return out;
}

pid_t process_id() noexcept {
  // Without the handler (pthread_atfork failed: out of memory at start-up) a cached pid could
  // go stale after a fork, so ask the kernel every time.
  if (!fork_handler_registered) return ::getpid();
  return cached_pid.load(std::memory_order_relaxed);
}

std::int64_t current_thread_id() noexcept { return this_thread_identity().tid; }

const std::string& current_thread_text() {
  auto& id = this_thread_identity();
  if (id.text.empty()) id.text = std::to_string(id.tid);
  return id.text;
}

}  // namespace sqllock::detail
