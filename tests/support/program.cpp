#include "support/program.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace sqllock::test {

std::vector<std::string> environment_with(const std::map<std::string, std::string>& changes) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : changes) {
    if (v.empty())
      merged.erase(k);
    else
      merged[k] = v;
  }
  std::vector<std::string> out;
  out.reserve(merged.size());
  for (const auto& [k, v] : merged) out.push_back(k + "=" + v);
  return out;
}

bool eventually(const std::function<bool()>& ready, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

program::program(const std::vector<std::string>& args, const std::filesystem::path& dir,
                 const std::map<std::string, std::string>& env) {
  static int counter = 0;
  const int n = counter++;
  out_ = dir / ("out." + std::to_string(::getpid()) + "." + std::to_string(n));
  err_ = dir / ("err." + std::to_string(::getpid()) + "." + std::to_string(n));

  std::vector<std::string> argv_s = args;
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_s = environment_with(env);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const int rc = posix_spawn(&pid_, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = -1;
    ADD_FAILURE() << "cannot start " << args.at(0) << ": " << std::strerror(rc);
  }
}

program::~program() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool program::running() {
  if (pid_ < 0 || status_) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    status_ = st;
    return false;
  }
  return true;
}

int program::wait(std::chrono::milliseconds timeout) {
  if (pid_ < 0) return -1;
  if (!eventually([&] { return !running(); }, timeout)) {
    ADD_FAILURE() << "process " << pid_ << " did not exit within " << timeout.count()
                  << " ms; killing it. stderr: " << err();
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    status_ = st;
  }
  return WIFEXITED(*status_) ? WEXITSTATUS(*status_) : 1000 + WTERMSIG(*status_);
}

run_result run_program(const std::vector<std::string>& argv, const std::filesystem::path& dir,
                       const std::map<std::string, std::string>& env, std::chrono::milliseconds timeout) {
  program p(argv, dir, env);
  const int code = p.wait(timeout);
  return {code, p.out(), p.err()};
}

}  // namespace sqllock::test
