#include "signals.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace sqllock::cli {

signal_inbox::signal_inbox() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaddset(&set, sig);
  }
  sigaddset(&set, SIGCHLD);

  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGCHLD, &dfl, &old_chld_);

  ::sigprocmask(SIG_BLOCK, &set, &old_mask_);
  fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    ::sigaction(SIGCHLD, &old_chld_, nullptr);
    throw std::system_error(err, std::generic_category(), "signalfd");
  }
}

signal_inbox::~signal_inbox() { ::close(fd_); }

std::optional<received_signal> signal_inbox::take() {
  signalfd_siginfo info;
  while (true) {
    const ssize_t n = ::read(fd_, &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info))
      return received_signal{static_cast<int>(info.ssi_signo), info.ssi_code == SI_KERNEL};
    if (n < 0 && errno == EINTR) continue;
    return std::nullopt;  // EAGAIN: nothing pending
  }
}

std::optional<received_signal> signal_inbox::wait_for_stop(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    while (auto s = take())
      if (s->number != SIGCHLD) return s;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
}

void signal_inbox::restore_for_child() const noexcept {
  ::sigaction(SIGCHLD, &old_chld_, nullptr);
  ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace sqllock::cli
