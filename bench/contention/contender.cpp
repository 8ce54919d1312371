// One contending process of sqllock_contention: the loop and its result file (contender.hpp).
#include "contender.hpp"

#include <time.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/rw_lock.hpp"
#include "sqllock/semaphore.hpp"
#include "sqllock/table_lock.hpp"

namespace sqllock::contention {

std::int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until_ns(std::int64_t at) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(at / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(at % 1'000'000'000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

namespace {

// The most derived of sqllock's exception types (sqllock/error.hpp) that `e` is.
std::string error_type(const std::exception& e) {
  if (dynamic_cast<const deadlock*>(&e)) return "deadlock";
  if (dynamic_cast<const serialization_failure*>(&e)) return "serialization_failure";
  if (dynamic_cast<const transaction_rollback*>(&e)) return "transaction_rollback";
  if (dynamic_cast<const permission_denied*>(&e)) return "permission_denied";
  if (dynamic_cast<const backend_error*>(&e)) return "backend_error";
  if (dynamic_cast<const outcome_unknown*>(&e)) return "outcome_unknown";
  if (dynamic_cast<const connection_error*>(&e)) return "connection_error";
  if (dynamic_cast<const lock_lost*>(&e)) return "lock_lost";
  if (dynamic_cast<const not_held*>(&e)) return "not_held";
  if (dynamic_cast<const schema_error*>(&e)) return "schema_error";
  if (dynamic_cast<const not_supported*>(&e)) return "not_supported";
  if (dynamic_cast<const invalid_argument*>(&e)) return "invalid_argument";
  if (dynamic_cast<const error*>(&e)) return "error";
  return "std::exception";
}

// One line of text: no newline, tab or double quote, at most 300 bytes.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t' || c == '"' || c == '\\') c = ' ';
  if (s.size() > 300) s.resize(300);
  return s;
}

// Releases a kind with levels (table, fair, rw): release() reports failures; when it throws, the
// level is given up with unlock() (whose errors go to the no-op callback) so that the next
// attempt does not re-enter a hold this process still has.
template <class Lock>
void release_level(Lock& lock) {
  try {
    lock.release();
  } catch (...) {
    if (lock.count() > 0) lock.unlock();
    throw;
  }
}

}  // namespace

// A kind with levels (table, fair, rw; rw takes write levels): try_lock_for, hold, release.
template <class Lock, class Options>
void contender::open_leveled(const std::function<void()>& on_lost,
                             const std::function<void(const std::exception&)>& on_unlock_error) {
  Options o;
  o.on_lost = on_lost;
  o.on_unlock_error = on_unlock_error;
  auto lock = std::make_shared<Lock>(*db_, config_.name, o);
  attempt_ = [this, lock, wait = config_.wait] {
    if (!lock->try_lock_for(wait)) return false;
    hold_and_release([&] { release_level(*lock); });
    return true;
  };
  close_ = [lock]() mutable { lock.reset(); };
}

contender::contender(contender_config config)
    : config_(std::move(config)), lost_(std::make_shared<std::atomic<std::int64_t>>(0)) {
  try {
    database_options options;
    options.pool_size = 2;
    db_.emplace(config_.uri, options);
    const auto lost = [counter = lost_] { counter->fetch_add(1); };
    const auto quiet = [](const std::exception&) {};
    const auto wait = config_.wait;
    switch (config_.kind) {
      case lock_kind::table: open_leveled<table_lock, table_lock_options>(lost, quiet); break;
      case lock_kind::fair: open_leveled<fair_lock, fair_lock_options>(lost, quiet); break;
      case lock_kind::rw: open_leveled<rw_lock, rw_lock_options>(lost, quiet); break;
      case lock_kind::semaphore: {
        semaphore_options o;
        o.on_lost = lost;
        o.on_unlock_error = quiet;
        auto sem = std::make_shared<semaphore>(*db_, config_.name, 1, o);
        attempt_ = [this, sem, wait] {
          auto p = sem->try_acquire_for(wait);
          if (!p) return false;
          hold_and_release([&] { p->release(); });
          return true;
        };
        close_ = [sem]() mutable { sem.reset(); };
        break;
      }
      case lock_kind::xact: {
        // The database's own queue: the wait happens in the server, the lock ends with the commit.
        attempt_ = [this, wait] {
          grant g;
          const bool ran = try_with_advisory_xact_lock_for(*db_, config_.name, wait, [&] {
            g.granted_ns = mono_ns();
            sleep_until_ns(g.granted_ns + std::chrono::nanoseconds(config_.hold).count());
            g.release_ns = mono_ns();
          });
          if (ran) {
            g.released_ns = mono_ns();
            result_.grants.push_back(g);
          }
          return ran;
        };
        close_ = [] {};
        break;
      }
    }
    result_.opened = true;
  } catch (const std::exception& e) {
    note_error("open " + error_type(e), e.what());
  }
}

contender::~contender() = default;

void contender::note_error(const std::string& type, const std::string& what) {
  ++result_.errors[type];
  if (result_.first_error.empty()) result_.first_error = one_line(type + ": " + what);
}

void contender::hold_and_release(const std::function<void()>& release) {
  grant g;
  g.granted_ns = mono_ns();
  sleep_until_ns(g.granted_ns + std::chrono::nanoseconds(config_.hold).count());
  g.release_ns = mono_ns();
  result_.grants.push_back(g);
  release();
  result_.grants.back().released_ns = mono_ns();
}

void contender::run_until(std::int64_t end_ns) {
  if (!result_.opened) return;
  const std::int64_t wait_ns = std::chrono::nanoseconds(config_.wait).count();
  while (mono_ns() < end_ns) {
    const std::int64_t asked = mono_ns();
    const std::size_t before = result_.grants.size();
    ++result_.attempts;
    try {
      if (!attempt_()) {
        ++result_.timeouts;
        const std::int64_t over = mono_ns() - (asked + wait_ns);
        if (over > result_.worst_overrun_ns) result_.worst_overrun_ns = over;
      } else if (result_.grants.size() > before) {
        // Granted: the wait ended when the lock call returned, before the hold.
        const std::int64_t over = result_.grants.back().granted_ns - (asked + wait_ns);
        if (over > result_.worst_overrun_ns) result_.worst_overrun_ns = over;
      }
    } catch (const std::exception& e) {
      note_error(error_type(e), e.what());
      const std::int64_t over = mono_ns() - (asked + wait_ns);
      if (over > result_.worst_overrun_ns) result_.worst_overrun_ns = over;
      // As an application would: do not hammer a failing server.
      sleep_until_ns(mono_ns() + 50'000'000);
    }
  }
}

contender_result contender::finish() {
  try {
    if (close_) close_();
    attempt_ = nullptr;
    db_.reset();
  } catch (const std::exception& e) {
    note_error("close " + error_type(e), e.what());
  }
  if (const auto lost = lost_->load(); lost > 0) result_.errors["lost"] += lost;
  return std::move(result_);
}

void write_result(const contender_result& r, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  for (const auto& g : r.grants)
    std::fprintf(f, "G %lld %lld %lld\n", static_cast<long long>(g.granted_ns), static_cast<long long>(g.release_ns),
                 static_cast<long long>(g.released_ns));
  for (const auto& [type, count] : r.errors)
    std::fprintf(f, "E %lld %s\n", static_cast<long long>(count), type.c_str());
  if (!r.first_error.empty()) std::fprintf(f, "F %s\n", r.first_error.c_str());
  // Last, so that a torn file (a killed process) has no N line.
  std::fprintf(f, "N %lld %lld %lld %d\n", static_cast<long long>(r.attempts), static_cast<long long>(r.timeouts),
               static_cast<long long>(r.worst_overrun_ns), r.opened ? 1 : 0);
  std::fclose(f);
}

std::optional<contender_result> read_result(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  contender_result r;
  bool complete = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() < 2) continue;
    std::istringstream s(line.substr(2));
    switch (line[0]) {
      case 'G': {
        grant g;
        s >> g.granted_ns >> g.release_ns >> g.released_ns;
        r.grants.push_back(g);
        break;
      }
      case 'E': {
        std::int64_t count = 0;
        std::string type;
        s >> count >> type;
        r.errors[type] += count;
        break;
      }
      case 'F': r.first_error = line.substr(2); break;
      case 'N': {
        int opened = 0;
        s >> r.attempts >> r.timeouts >> r.worst_overrun_ns >> opened;
        r.opened = opened != 0;
        complete = true;
        break;
      }
      default: break;
    }
  }
  if (!complete) return std::nullopt;
  return r;
}

}  // namespace sqllock::contention
