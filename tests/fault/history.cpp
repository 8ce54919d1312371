#include "fault/history.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sqllock::fault {

std::int64_t mono_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

history_writer::history_writer(const std::filesystem::path& path)
    : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
  if (fd_ < 0) throw std::runtime_error("cannot open history file " + path.string());
}

history_writer::~history_writer() { ::close(fd_); }

void history_writer::write(char type, int thread, std::int64_t mono, const std::string& resource, std::int64_t fence,
                           const std::vector<std::string>& fields) {
  std::string line;
  line.reserve(96);
  line += type;
  line += ' ' + std::to_string(thread) + ' ' + std::to_string(mono) + ' ' + resource + ' ' + std::to_string(fence);
  for (const auto& f : fields) line += ' ' + f;
  line += '\n';
  // One write() per line: O_APPEND makes it atomic with respect to the other threads' lines.
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n <= 0) return;  // a full disk loses history lines; the checkers then report misses
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::vector<event> read_history(const std::filesystem::path& path, pid_t pid) {
  std::vector<event> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof() && !line.empty()) break;  // no trailing newline: a cut line
    std::istringstream fields(line);
    event e;
    e.pid = pid;
    if (!(fields >> e.type >> e.thread >> e.mono >> e.resource >> e.fence)) continue;
    for (std::string f; fields >> f;) e.fields.push_back(f);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace sqllock::fault
