// Running a program under test as a real process: arguments, extra environment, stdout and
// stderr captured in files, default signal handling, and a kill on destruction so that a failed
// test leaves nothing behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sqllock::test {

// Polls `ready` every 10 ms for up to `timeout`; returns whether it became true.
bool eventually(const std::function<bool()>& ready, std::chrono::milliseconds timeout);

// This process's environment as NAME=VALUE entries, with `changes` applied: each entry is added
// or replaces the variable, an empty value removes it. For posix_spawn's envp.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& changes);

// The whole content of a file ("" when it does not exist).
std::string read_text(const std::filesystem::path& p);

class program {
 public:
  // Starts argv[0] (a path) with argv[1…]. `env` entries are added to (or replace) this
  // process's environment; an empty value removes the variable. stdin is /dev/null; stdout and
  // stderr go to files in `dir`. Fails the current test when the program cannot start.
  program(const std::vector<std::string>& argv, const std::filesystem::path& dir,
          const std::map<std::string, std::string>& env = {});
  ~program();
  program(const program&) = delete;
  program& operator=(const program&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Waits up to `timeout` for the exit (then SIGKILLs it and fails the test). Returns the exit
  // code, or 1000 + N when killed by signal N.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  std::string out() const { return read_text(out_); }
  std::string err() const { return read_text(err_); }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::filesystem::path out_, err_;
};

// Runs a program to completion: exit code (as program::wait), stdout and stderr.
struct run_result {
  int code;
  std::string out;
  std::string err;
};
run_result run_program(const std::vector<std::string>& argv, const std::filesystem::path& dir,
                       const std::map<std::string, std::string>& env = {},
                       std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace sqllock::test
