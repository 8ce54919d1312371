// Forking helpers for multi-process tests: children run a function and exit with its status.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <vector>

namespace sqllock::test {

// Forks one child per call that waits for start(), runs `body` and exits with its return value
// (1 when it throws, after printing the exception to stderr).
class process_group {
 public:
  process_group();
  ~process_group();
  pid_t spawn(std::function<int()> body);
  // Lets every spawned child run `body` at once.
  void start();
  // Waits for every child; returns how many exited with status 0. A child still running after
  // `limit` (hung, e.g. a deadlock in a forked child) is killed, reported on stderr and counted
  // as failed, so the test fails with a diagnosis instead of running into ctest's timeout.
  int wait_all(std::chrono::seconds limit = std::chrono::seconds(120));

 private:
  int gate_[2];
  std::vector<pid_t> children_;
};

}  // namespace sqllock::test
