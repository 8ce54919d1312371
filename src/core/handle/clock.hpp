// The clock seam of the core: every timing decision of the lease watchdog, the session keepalive
// and the lock waits reads time, sleeps and waits through a detail::time_source, which a database_impl
// hands to them (database_impl::clock()). The product uses steady_clock(); unit tests substitute
// a fake whose time moves only when the test says so (tests/support/fake_clock.hpp), so the
// timing rules run in milliseconds without a server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>

namespace sqllock::detail {

using steady = std::chrono::steady_clock;

class time_source {
 public:
  using time_point = steady::time_point;
  using duration = steady::duration;
  virtual ~time_source() = default;

  // The current time. Time points of every clock share steady_clock's epoch, so a deadline made
  // by sqllock/deadline.hpp can be compared with now().
  virtual time_point now() const noexcept = 0;

  // Blocks the calling thread until now() >= until.
  virtual void sleep_until(time_point until) = 0;

  // Waits on `cv` (with `lock` held, as std::condition_variable_any::wait_until) until `until`, a
  // stop request or a notification. May return early (a spurious wake): callers re-check their
  // condition and now(). time_point::max() waits without a time limit.
  virtual void wait_until(std::condition_variable_any& cv, std::unique_lock<std::mutex>& lock, std::stop_token stop,
                          time_point until) = 0;

  void sleep_for(duration d) { sleep_until(now() + d); }
};

// std::chrono::steady_clock, shared by every handle that was not given another clock.
std::shared_ptr<time_source> steady_clock();

// A background thread's sleep that other threads cut short only when they need it sooner, so
// that a lock/unlock loop does not cost a thread switch per cycle. All members require the mutex
// the sleeping thread waits with.
class wake_schedule {
 public:
  // Sleeps until `until` (max(): until notified), a stop request or a notify(); while asleep,
  // due_before() compares against `until`.
  void sleep(time_source& c, std::condition_variable_any& cv, std::unique_lock<std::mutex>& lock, std::stop_token stop,
             time_source::time_point until) {
    scheduled_ = until;
    c.wait_until(cv, lock, std::move(stop), until);
    scheduled_ = time_source::time_point::min();
  }
  // True when something due at `due` needs the thread woken: it sleeps past `due`. While the
  // thread is awake it re-reads its work before sleeping again, so nothing needs waking.
  bool due_before(time_source::time_point due) const noexcept { return due < scheduled_; }

 private:
  // When the sleeping thread wakes next; min() while it is awake.
  time_source::time_point scheduled_ = time_source::time_point::min();
};

}  // namespace sqllock::detail
