// The history of a fault run: one text file per worker process, one line per event, appended
// with a single write() each so that a SIGKILL never leaves a half line and everything written
// before the kill survives. Times are CLOCK_MONOTONIC nanoseconds (one clock for every process
// on the host, so histories of different processes can be merged and compared).
//
// Line: <type> <thread> <mono_ns> <resource> <fence> <field>…   (fields contain no spaces)
//   A  acquired; fields: db_time_us (database clock at the first read), read_value, call_ns (when
//      the acquire call began: a pause inside the call can leave the lease expired on return);
//      queued kinds (fair, rw) add the mode: w (write) or r (read)
//   R  a read hold's last read, before its release; fields: db_time_us, read_value
//   N  re-entered while holding; fields: fence seen by the inner acquire
//   F  fenced write; fields: ok|rej|unk, send_ns
//   U  unfenced write (read-sleep-write); fields: ok|unk
//   Y  about to release (a release may commit and the process die before X is written)
//   X  released; fields: ok|notheld|lost|err|unk
//   L  the lost-lock signal fired while holding
//   T  acquire failed with an exception; fields: the exception class, call_ns (worker.cpp's threads)
//   G  queued kinds: the acquire gave up (its wait ran out); fields: call_ns
// fence is -1 for lock kinds without fencing tokens.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sqllock::fault {

// CLOCK_MONOTONIC in nanoseconds.
std::int64_t mono_ns() noexcept;

struct event {
  pid_t pid = 0;  // the worker process (from the file name)
  char type = '?';
  int thread = 0;
  std::int64_t mono = 0;
  std::string resource;
  std::int64_t fence = -1;
  std::vector<std::string> fields;
};

// Appends lines to one history file. Thread-safe: each line is one write() on an O_APPEND file.
class history_writer {
 public:
  explicit history_writer(const std::filesystem::path& path);
  ~history_writer();
  history_writer(const history_writer&) = delete;
  history_writer& operator=(const history_writer&) = delete;
  // Writes "<type> <thread> <mono> <resource> <fence> <fields…>\n".
  void write(char type, int thread, std::int64_t mono, const std::string& resource, std::int64_t fence,
             const std::vector<std::string>& fields = {});

 private:
  int fd_;
};

// Every event of the file `path`, written by process `pid`, in file order. A truncated last line
// (impossible with write(), but cheap to tolerate) is skipped.
std::vector<event> read_history(const std::filesystem::path& path, pid_t pid);

}  // namespace sqllock::fault
