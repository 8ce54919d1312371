#include "fault/spawn.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "support/program.hpp"

namespace sqllock::fault {
namespace {

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

pid_t spawn(const std::vector<std::string>& argv, const std::string& log, const std::map<std::string, std::string>& env,
            const std::string& out) {
  std::vector<std::string> env_text = test::environment_with(env);
  std::vector<char*> envp, args;
  for (auto& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out.empty())
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
  else
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // Default signal dispositions and an empty mask in the child, whatever the controller blocks.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

int run(const std::vector<std::string>& argv, const std::string& log, const std::map<std::string, std::string>& env,
        std::string* output) {
  const std::string out = output ? log + ".stdout" : std::string();
  const pid_t pid = spawn(argv, log, env, out);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid failed for " + argv[0]);
  }
  if (output) {
    std::ifstream in(out);
    *output = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::ofstream(log, std::ios::app) << *output;
    std::filesystem::remove(out);
  }
  return exit_code(status);
}

bool reap(pid_t pid, int* code) {
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r != pid) return false;
  if (code) *code = exit_code(status);
  return true;
}

}  // namespace sqllock::fault
