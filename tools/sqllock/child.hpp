// Starting the command of `sqllock run`: fork + exec with only async-signal-safe calls in
// between (sqllock has threads and open database connections by then), with exactly the file
// descriptors sqllock itself was started with, and with exec failures reported to the parent.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace sqllock::cli {

class signal_inbox;

// The descriptors open in this process right now (from /proc/self/fd, or by probing when /proc
// is not mounted). Taken before the database is opened, it is the set the command may inherit.
std::vector<int> open_fds();

// The outcome of starting a command.
struct start_result {
  pid_t pid = -1;  // the running command; -1 when exec failed
  int error = 0;   // errno of the failed exec (ENOENT: not found, EACCES: not executable, …)
};

class command_line {
 public:
  // Prepares `argv` (argv[0] is looked up in $PATH like execvp when it has no '/') so that the
  // child needs no allocation. `keep_fds` (besides 0, 1, 2) stay open in the command; every other
  // descriptor is closed before exec. Requires a non-empty argv.
  command_line(std::vector<std::string> argv, std::vector<int> keep_fds);

  // Forks and execs with the environment `env` (NAME=VALUE entries). In the child: restores the
  // signal mask and dispositions through `signals`, closes foreign descriptors, tries each $PATH
  // candidate (a file without a `#!` line runs through /bin/sh, as execvp does). Returns once the
  // command was exec'ed or failed to be. Throws std::system_error when fork or pipe fails.
  start_result start(const signal_inbox& signals, const std::vector<std::string>& env) const;

  const std::string& name() const noexcept { return argv_.front(); }

 private:
  std::vector<std::string> argv_;
  std::vector<std::string> candidates_;  // full paths to try, in order
  std::vector<int> keep_fds_;            // sorted
};

}  // namespace sqllock::cli
