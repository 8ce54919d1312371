#include "child.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <system_error>

#include "signals.hpp"

namespace sqllock::cli {

std::vector<int> open_fds() {
  std::vector<int> fds;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(dir);
    while (const dirent* e = ::readdir(dir)) {
      char* end = nullptr;
      const long fd = std::strtol(e->d_name, &end, 10);
      if (end != e->d_name && *end == '\0' && fd != own) fds.push_back(static_cast<int>(fd));
    }
    ::closedir(dir);
  } else {
    for (int fd = 0; fd < 4096; ++fd)
      if (::fcntl(fd, F_GETFD) != -1) fds.push_back(fd);
  }
  std::sort(fds.begin(), fds.end());
  return fds;
}

command_line::command_line(std::vector<std::string> argv, std::vector<int> keep_fds)
    : argv_(std::move(argv)), keep_fds_(std::move(keep_fds)) {
  const std::string& file = argv_.front();
  if (file.empty()) {
    // execvp fails with ENOENT; no candidate gives the same.
  } else if (file.find('/') != std::string::npos) {
    candidates_.push_back(file);
  } else {
    const char* env = std::getenv("PATH");
    const std::string_view path = env ? env : "/bin:/usr/bin";
    std::size_t begin = 0;
    while (true) {
      const std::size_t end = std::min(path.find(':', begin), path.size());
      const std::string_view dir = path.substr(begin, end - begin);
      candidates_.push_back(dir.empty() ? file : std::string(dir) + "/" + file);  // "" is the cwd
      if (end == path.size()) break;
      begin = end + 1;
    }
  }
  std::sort(keep_fds_.begin(), keep_fds_.end());
}

namespace {

// Child side, async-signal-safe only: closes every descriptor above 2 not in `keep` (sorted,
// unique). `open_now`, listed before fork, is the fallback for kernels without close_range.
void close_foreign_fds(const std::vector<int>& keep, const std::vector<int>& open_now) {
  unsigned lo = 3;
  bool ranges_ok = true;
  for (int k : keep) {
    const auto fd = static_cast<unsigned>(k);
    if (fd < lo) continue;
    if (fd > lo && ranges_ok) ranges_ok = ::close_range(lo, fd - 1, 0) == 0;
    lo = fd + 1;
  }
  if (ranges_ok) ranges_ok = ::close_range(lo, UINT_MAX, 0) == 0;
  if (ranges_ok) return;
  for (int fd : open_now)
    if (fd > 2 && !std::binary_search(keep.begin(), keep.end(), fd)) ::close(fd);
}

[[noreturn]] void report_and_exit(int pipe_fd, int error) {
  while (::write(pipe_fd, &error, sizeof error) < 0 && errno == EINTR) {
  }
  ::_exit(127);
}

}  // namespace

start_result command_line::start(const signal_inbox& signals, const std::vector<std::string>& env) const {
  // Everything the child touches is built here, before fork.
  std::vector<char*> argv;
  for (const auto& a : argv_) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // For a file without a #! line: /bin/sh FILE ARGS… (slot 1 is filled in per candidate).
  std::vector<char*> sh_argv{const_cast<char*>("/bin/sh"), nullptr};
  for (std::size_t i = 1; i < argv_.size(); ++i) sh_argv.push_back(const_cast<char*>(argv_[i].c_str()));
  sh_argv.push_back(nullptr);
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  const std::vector<int> open_now = open_fds();
  std::vector<int> keep = keep_fds_;
  keep.push_back(report[1]);  // close-on-exec: open until the exec succeeds
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(report[0]);
    ::close(report[1]);
    throw std::system_error(err, std::generic_category(), "fork");
  }
  if (pid == 0) {
    signals.restore_for_child();
    close_foreign_fds(keep, open_now);
    // execvp's search: skip candidates that do not exist, remember EACCES (reported when nothing
    // else runs), stop at any other error.
    bool denied = false;
    for (const auto& c : candidates_) {
      ::execve(c.c_str(), argv.data(), envp.data());
      const int error = errno;
      if (error == ENOEXEC) {
        sh_argv[1] = const_cast<char*>(c.c_str());
        ::execve("/bin/sh", sh_argv.data(), envp.data());
        report_and_exit(report[1], errno);
      }
      if (error == EACCES)
        denied = true;
      else if (error != ENOENT && error != ENOTDIR && error != ESTALE && error != ENODEV && error != ETIMEDOUT)
        report_and_exit(report[1], error);
    }
    report_and_exit(report[1], denied ? EACCES : ENOENT);
  }

  ::close(report[1]);
  int error = 0;
  ssize_t n;
  while ((n = ::read(report[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof error)) {  // exec failed; the child exited 127
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return {-1, error};
  }
  return {pid, 0};
}

}  // namespace sqllock::cli
