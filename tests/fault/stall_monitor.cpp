#include "fault/stall_monitor.hpp"

#include <chrono>
#include <condition_variable>
#include <optional>

#include "fault/history.hpp"
#include "sqllock/database.hpp"
#include "sqllock/error.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kMachineLate = 100 * kMs;
constexpr std::int64_t kServerSlow = 100 * kMs;

// Sleeps `d` unless `stop` is requested first; false when it was.
bool nap(std::stop_token stop, std::chrono::milliseconds d) {
  std::mutex m;
  std::unique_lock lock(m);
  return !std::condition_variable_any().wait_for(lock, stop, d, [] { return false; }) && !stop.stop_requested();
}

}  // namespace

stall_monitor::stall_monitor(const std::string& server_uri) {
  machine_ = std::jthread([this](std::stop_token stop) {
    constexpr auto period = std::chrono::milliseconds(10);
    for (std::int64_t before = mono_ns(); nap(stop, period);) {
      const std::int64_t now = mono_ns();
      const std::int64_t due = before + std::chrono::nanoseconds(period).count();
      if (now - due >= kMachineLate) record("machine-stall", due, now);
      before = now;
    }
  });
  if (server_uri.empty()) return;
  server_ = std::jthread([this, server_uri](std::stop_token stop) {
    std::optional<database> db;
    while (nap(stop, std::chrono::milliseconds(20))) {
      try {
        if (!db) db.emplace(server_uri);
        const std::int64_t sent = mono_ns();
        test::sql(*db, "SELECT 1");
        const std::int64_t back = mono_ns();
        if (back - sent >= kServerSlow) record("server-stall", sent, back);
      } catch (const error&) {
        db.reset();  // a restart: the nemesis logs it; connect again
      }
    }
  });
}

stall_monitor::~stall_monitor() = default;

void stall_monitor::record(const char* kind, std::int64_t start, std::int64_t end) {
  std::lock_guard lock(mu_);
  stalls_.push_back({kind, 0, start, end, 0, 0});
}

std::vector<fault_event> stall_monitor::stalls() const {
  std::lock_guard lock(mu_);
  return stalls_;
}

}  // namespace sqllock::fault
