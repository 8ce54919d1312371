#include "stop_signals.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "log.hpp"

namespace sqllock::reaper {
namespace {

sigset_t stop_set() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGINT);
  return s;
}

}  // namespace

stop_signals::stop_signals(std::chrono::milliseconds grace) : grace_(grace) {
  const sigset_t s = stop_set();
  if (const int rc = ::pthread_sigmask(SIG_BLOCK, &s, &old_mask_); rc != 0)
    throw std::system_error(rc, std::generic_category(), "cannot block SIGTERM/SIGINT");
  watcher_ = std::jthread([this](std::stop_token quit) { watch(quit); });
}

stop_signals::~stop_signals() {
  watcher_.request_stop();
  if (watcher_.joinable()) watcher_.join();
  ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

void stop_signals::watch(std::stop_token quit) {
  const sigset_t s = stop_set();
  // Short timeouts: the watcher notices `quit` (the program finished) without needing a signal.
  const timespec tick{0, 50'000'000};
  while (!quit.stop_requested()) {
    const int sig = ::sigtimedwait(&s, nullptr, &tick);
    if (sig < 0) continue;                     // timeout or EINTR
    if (signal_.exchange(sig) != 0) continue;  // a second signal changes nothing
    log_event(level::info, "stop", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
    stop_.request_stop();
    const auto deadline = std::chrono::steady_clock::now() + grace_;
    while (!quit.stop_requested()) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds::zero()) {
        log_event(level::error, "forced_exit",
                  {{"reason", "a database call did not return within " + std::to_string(grace_.count()) +
                                  " ms of the signal; its transaction is rolled back when the connection closes"}});
        std::fflush(nullptr);
        std::_Exit(0);  // a requested stop, as when the pass ends in time
      }
      // Swallow further signals while waiting; wake at the deadline itself, not up to a tick after it.
      const auto wait = std::min<std::chrono::nanoseconds>(left, std::chrono::milliseconds(50));
      const timespec until_deadline{0, static_cast<long>(wait.count())};
      ::sigtimedwait(&s, nullptr, &until_deadline);
    }
  }
}

}  // namespace sqllock::reaper
