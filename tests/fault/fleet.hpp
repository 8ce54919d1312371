// The worker processes of a run: started, restarted after a crash (so N stay busy), signalled
// by the nemesis, and finally all killed. Every process ever started is remembered with its
// history file and, once dead, the time it was killed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace sqllock::fault {

struct worker_proc {
  pid_t pid = 0;
  int slot = 0;
  std::filesystem::path history;
  std::int64_t killed_at = 0;  // CLOCK_MONOTONIC of the SIGKILL; 0 while alive or when it exited
  bool alive = true;
};

class fleet {
 public:
  // `argv_for(slot, history)` builds a worker's command line.
  using argv_fn = std::function<std::vector<std::string>(int slot, const std::filesystem::path& history)>;
  fleet(int processes, std::filesystem::path dir, argv_fn argv_for);
  ~fleet();  // kills what is still running

  void start();
  // Reaps exited workers and starts replacements (until stop_respawning()).
  void supervise();
  void stop_respawning();
  // The living workers' pids.
  std::vector<pid_t> living();
  // The living worker in `slot`, or 0.
  pid_t in_slot(int slot);
  // Sends `sig` to `pid` if it is a living worker (under the lock that guards reaping, so the pid
  // cannot be reused meanwhile). SIGKILL records the time. Returns the send time, 0 if not sent.
  std::int64_t signal(pid_t pid, int sig);
  // SIGKILLs every living worker at once and reaps them; returns the time.
  std::int64_t kill_all();
  // Every worker ever started.
  std::vector<worker_proc> all();

 private:
  void launch(int slot);  // requires mu_
  int processes_;
  std::filesystem::path dir_;
  argv_fn argv_for_;
  std::mutex mu_;
  std::vector<worker_proc> procs_;
  bool respawn_ = true;
};

}  // namespace sqllock::fault
