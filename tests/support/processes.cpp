#include "support/processes.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <thread>

namespace sqllock::test {

process_group::process_group() {
  if (::pipe(gate_) != 0) std::abort();
}

process_group::~process_group() {
  if (gate_[1] >= 0) ::close(gate_[1]);
  if (gate_[0] >= 0) ::close(gate_[0]);
  for (pid_t pid : children_) {  // a failed test must not leave children behind
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
}

pid_t process_group::spawn(std::function<int()> body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    ::close(gate_[1]);
    char c;
    (void)!::read(gate_[0], &c, 1);  // EOF once the parent closes its end
    int code = 1;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child %d: %s\n", static_cast<int>(::getpid()), e.what());
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  children_.push_back(pid);
  return pid;
}

void process_group::start() {
  ::close(gate_[1]);
  gate_[1] = -1;
}

int process_group::wait_all(std::chrono::seconds limit) {
  start();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int ok = 0;
  for (pid_t pid : children_) {
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (done == 0) {
      std::fprintf(stderr, "child %d still running after %lld s: killed\n", static_cast<int>(pid),
                   static_cast<long long>(limit.count()));
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      continue;
    }
    if (done == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) ++ok;
  }
  children_.clear();
  return ok;
}

}  // namespace sqllock::test
