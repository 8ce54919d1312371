// The signals `sqllock run` reacts to, read synchronously from a signalfd instead of handled
// asynchronously, so that waiting for the lock, forwarding to the command and noticing its exit
// are one poll() loop with no async-signal-safety concerns.
#pragma once

#include <signal.h>

#include <chrono>
#include <optional>

namespace sqllock::cli {

// One received signal.
struct received_signal {
  int number = 0;
  // Sent by the kernel for the terminal (Ctrl-C, Ctrl-\, hangup) to the whole foreground process
  // group: the command, which shares sqllock's process group, got it too.
  bool from_terminal = false;
};

class signal_inbox {
 public:
  // Blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT (each unless its disposition is SIG_IGN: e.g.
  // nohup's SIGHUP stays ignored) and SIGCHLD in the calling thread, and opens a signalfd for
  // them. Must run before the process starts any thread, so that every thread inherits the mask
  // and only the signalfd sees these signals. An inherited SIG_IGN for SIGCHLD is reset to the
  // default, because it would make the kernel reap the command before sqllock sees its status.
  // Throws std::system_error when the signalfd cannot be created.
  signal_inbox();
  // Closes the signalfd but leaves the signals blocked: sqllock is about to exit with the status
  // it chose, and unblocking would let a late SIGTERM kill it and replace that status.
  ~signal_inbox();
  signal_inbox(const signal_inbox&) = delete;
  signal_inbox& operator=(const signal_inbox&) = delete;

  // The signalfd (non-blocking, close-on-exec); readable while a signal is pending.
  int fd() const noexcept { return fd_; }

  // The next pending signal, without waiting; nullopt when none is pending.
  std::optional<received_signal> take();

  // Waits up to `timeout` for one of SIGINT, SIGTERM, SIGHUP, SIGQUIT and returns it; nullopt
  // when the time passed without one. Other pending signals (SIGCHLD) are discarded.
  std::optional<received_signal> wait_for_stop(std::chrono::milliseconds timeout);

  // For the command's process, between fork and exec (async-signal-safe): restores the signal
  // mask and SIGCHLD disposition sqllock started with.
  void restore_for_child() const noexcept;

 private:
  int fd_ = -1;
  sigset_t old_mask_;
  struct sigaction old_chld_;
};

}  // namespace sqllock::cli
