// A detail::time_source whose time moves only when the test says so: advance() moves it, and the
// core's background threads (lease watchdog, session keepalive) see the new time within a
// millisecond, because a fake wait never lasts longer than that in real time (callers re-check
// their condition after every wake). sleep_until() — a lock waiter's backoff — moves the fake time
// itself and records how long it asked to sleep, so a wait runs without waiting.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core/handle/clock.hpp"

namespace test {

class fake_clock final : public sqllock::detail::time_source {
 public:
  fake_clock() : now_(std::chrono::steady_clock::now().time_since_epoch().count()) {}

  time_point now() const noexcept override { return time_point(duration(now_.load())); }

  // Moves the time forward by `d`, in steps of `step` with a pause for the background threads
  // between steps, so that each of them runs at the times it asked for, not only at the end.
  void advance(duration d, duration step = std::chrono::milliseconds(10)) {
    const auto end = now() + d;
    while (now() < end) {
      const auto next = std::min(end, now() + step);
      now_.store(next.time_since_epoch().count());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // real time: let them look
    }
  }

  void sleep_until(time_point until) override {
    {
      std::lock_guard lock(mu_);
      sleeps_.push_back(until - now());
    }
    auto t = now_.load();
    while (t < until.time_since_epoch().count() && !now_.compare_exchange_weak(t, until.time_since_epoch().count())) {
    }
  }

  void wait_until(std::condition_variable_any& cv, std::unique_lock<std::mutex>& lock, std::stop_token stop,
                  time_point until) override {
    if (stop.stop_requested() || now() >= until) return;
    bool woken = false;
    cv.wait_for(lock, stop, std::chrono::milliseconds(1), [&] { return std::exchange(woken, true); });
  }

  // The durations sleep_until() was asked to sleep, in order.
  std::vector<duration> sleeps() const {
    std::lock_guard lock(mu_);
    return sleeps_;
  }

 private:
  std::atomic<duration::rep> now_;
  mutable std::mutex mu_;
  std::vector<duration> sleeps_;
};

}  // namespace test
