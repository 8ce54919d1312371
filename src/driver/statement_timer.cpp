#include "driver/statement_timer.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <utility>

namespace sqllock::detail {

statement_timer::ticket::ticket(ticket&& other) noexcept
    : timer_(std::exchange(other.timer_, nullptr)), it_(other.it_) {}

statement_timer::ticket& statement_timer::ticket::operator=(ticket&& other) noexcept {
  if (this != &other) {
    disarm();
    timer_ = std::exchange(other.timer_, nullptr);
    it_ = other.it_;
  }
  return *this;
}

statement_timer::ticket::~ticket() { disarm(); }

bool statement_timer::ticket::disarm() noexcept {
  if (timer_ == nullptr) return false;
  int fd = -1;
  bool fired = false;
  {
    std::lock_guard lock(timer_->mu_);
    fd = it_->fd;
    fired = it_->fired;
    timer_->entries_.erase(it_);
  }
  timer_ = nullptr;
  ::close(fd);  // the duplicate only; the client library's own descriptor is untouched
  return fired;
}

statement_timer::~statement_timer() {
  if (thread_.joinable()) {
    thread_.request_stop();
    changed_.notify_all();
  }
}

statement_timer& statement_timer::process() {
  // One per process: a forked child makes its own (the parent's thread does not exist there) and
  // leaves the parent's copy alone. Never destroyed, so a handle destroyed during static
  // destruction can still disarm.
  static std::mutex guard;
  static std::atomic<statement_timer*> current{nullptr};
  statement_timer* t = current.load(std::memory_order_acquire);
  if (t != nullptr && t->owner_pid_ == ::getpid()) return *t;
  std::lock_guard lock(guard);
  t = current.load(std::memory_order_relaxed);
  if (t == nullptr || t->owner_pid_ != ::getpid()) {
    t = new statement_timer();  // leaked on purpose, see above
    t->threaded_ = true;
    t->owner_pid_ = ::getpid();
    current.store(t, std::memory_order_release);
  }
  return *t;
}

statement_timer::ticket statement_timer::arm(int socket, clock::time_point deadline) {
  if (socket < 0 || deadline == clock::time_point::max()) return {};
  const int fd = ::fcntl(socket, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return {};  // out of descriptors: the statement runs unwatched
  std::lock_guard lock(mu_);
  if (threaded_ && !thread_.joinable() && !start_thread_locked()) {
    ::close(fd);
    return {};  // no thread to be had now: the statement runs unwatched, the next one tries again
  }
  entries_.push_back({fd, deadline});
  if (threaded_ && deadline < wake_at_) changed_.notify_all();
  return ticket(this, std::prev(entries_.end()));
}

bool statement_timer::start_thread_locked() noexcept {
  try {
    thread_ = std::jthread([this](std::stop_token stop) { run(std::move(stop)); });
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

statement_timer::clock::time_point statement_timer::fire_due(clock::time_point now) {
  std::lock_guard lock(mu_);
  auto next = clock::time_point::max();
  for (auto& e : entries_) {
    if (e.fired) continue;
    if (e.deadline <= now) {
      // Ends the blocked call at once: its reads see end-of-file, its writes fail.
      ::shutdown(e.fd, SHUT_RDWR);
      e.fired = true;
    } else {
      next = std::min(next, e.deadline);
    }
  }
  return next;
}

std::size_t statement_timer::armed_count() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

void statement_timer::run(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    lock.unlock();
    const auto next = fire_due(clock::now());
    lock.lock();
    // An arm() between fire_due and here sees wake_at_ still min() and notifies in vain; the
    // deadline is then picked up by the wait below, whose predicate re-reads the entries.
    wake_at_ = next;
    const auto sooner = [&] {
      return std::any_of(entries_.begin(), entries_.end(),
                         [&](const ticket::entry& e) { return !e.fired && e.deadline < wake_at_; });
    };
    if (next == clock::time_point::max())
      changed_.wait(lock, stop, sooner);
    else
      changed_.wait_until(lock, stop, next, sooner);
    wake_at_ = clock::time_point::min();
  }
}

}  // namespace sqllock::detail
