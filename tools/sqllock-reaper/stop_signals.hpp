// SIGTERM and SIGINT as a stop request. The signals are blocked in every thread and taken by one
// watcher thread with sigtimedwait(), so no async-signal-safety concerns arise: the watcher logs
// the signal and requests stop. A pass that is stuck in a database call (e.g. a connect timeout)
// cannot be interrupted, so if the program has not finished within `grace` of the signal, the
// watcher ends the process itself with status 0 (the server rolls back the open transaction when
// the connection closes). Either way the process exits within about a second of the signal.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>

namespace sqllock::reaper {

class stop_signals {
 public:
  // Blocks SIGTERM and SIGINT in the calling thread and starts the watcher. Must run before any
  // other thread starts, so that all threads inherit the mask. Throws std::system_error.
  explicit stop_signals(std::chrono::milliseconds grace);
  // Stops the watcher and restores the signal mask.
  ~stop_signals();
  stop_signals(const stop_signals&) = delete;
  stop_signals& operator=(const stop_signals&) = delete;

  // Signalled when SIGTERM or SIGINT arrives.
  std::stop_token token() const noexcept { return stop_.get_token(); }

  // The signal that requested stop, or 0.
  int signal_number() const noexcept { return signal_.load(); }

 private:
  void watch(std::stop_token quit);

  std::chrono::milliseconds grace_;
  sigset_t old_mask_;
  std::stop_source stop_;
  std::atomic<int> signal_{0};
  std::jthread watcher_;
};

}  // namespace sqllock::reaper
