#include "metrics.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

namespace sqllock::reaper {
namespace {

void sample(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            std::string_view table, const std::string& value) {
  out += "# HELP " + std::string(name) + " " + std::string(help) + "\n";
  out += "# TYPE " + std::string(name) + " " + std::string(type) + "\n";
  out += std::string(name) + "{table=\"" + std::string(table) + "\"} " + value + "\n";
}

std::string seconds(std::chrono::nanoseconds d) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6f", std::chrono::duration<double>(d).count());
  return buf;
}

}  // namespace

std::string metrics::to_prometheus(std::string_view table) const {
  std::string out;
  sample(out, "sqllock_reaper_passes_total", "counter", "Reaper passes run, successful or not.", table,
         std::to_string(passes));
  sample(out, "sqllock_reaper_rows_reaped_total", "counter",
         "Expired lock rows, semaphore permits, wait-queue entries and latches deleted.", table,
         std::to_string(rows_reaped));
  sample(out, "sqllock_reaper_errors_total", "counter", "Reaper passes that failed.", table, std::to_string(errors));
  sample(out, "sqllock_reaper_last_pass_duration_seconds", "gauge", "Duration of the latest pass.", table,
         seconds(last_pass_duration));
  char stamp[48];
  std::snprintf(stamp, sizeof stamp, "%.3f", std::chrono::duration<double>(last_success.time_since_epoch()).count());
  sample(out, "sqllock_reaper_last_success_timestamp_seconds", "gauge",
         "Unix time at which the latest successful pass ended; 0 before the first.", table, stamp);
  return out;
}

void write_file_atomically(const std::string& path, std::string_view text) {
  const auto fail = [&](const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what + " " + path);
  };
  // Same directory as the target, so rename() stays on one file system and is atomic.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create a temporary file for");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      errno = saved;
      fail("cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    fail("cannot write");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    fail("cannot replace");
  }
}

}  // namespace sqllock::reaper
