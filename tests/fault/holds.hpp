// The critical sections of a fault run as the workers' histories tell them (fault/history.hpp),
// shared by the common checkers (fault/checker.cpp) and the queue checkers (fault/queue_check.hpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fault/fleet.hpp"
#include "fault/history.hpp"

namespace sqllock::fault {

// One critical section.
struct hold_rec {
  pid_t pid = 0;
  int thread = 0;
  std::string res;
  std::int64_t fence = -1;
  std::int64_t start = 0, end = 0;
  std::int64_t called = 0;  // the acquire call began (a fault from here on can stale the hold)
  bool releasing = false;   // Y seen: the section ended and the release began
  std::string release;      // X's outcome; "" when the process died first
  std::int64_t release_at = 0;
  std::int64_t lost_at = 0;  // first lost signal (may precede start: see build_holds)
  std::vector<std::pair<std::int64_t, std::int64_t>> reentries;  // (time, inner fence)
  std::string fenced;                                            // ok / rej / unk; "" when not attempted
  std::int64_t fenced_sent = 0, fenced_done = 0;
  std::int64_t db_us = 0;                  // the database clock at the section's first read (A); 0 when it failed
  bool writer = true;                      // queued kinds: a write hold (A's mode w), else a read hold (r)
  std::int64_t read_end_us = 0;            // read holds: the database clock at the section's last read (R)
  std::int64_t u_first = -1, u_last = -1;  // read holds: u at the first and the last read
  std::string guarded;                     // W's outcome (ok / lost / rej / unk); "" when not attempted
  std::int64_t guarded_sent = 0;           // W: when its commit was sent (0: it was not)
  std::int64_t guarded_attempted = 0;      // W: when its transaction began
};

// Every hold of every worker thread, from the merged histories; a hold cut by its process's death
// ends at the kill (workers: their kill times).
std::vector<hold_rec> build_holds(const std::vector<event>& events, const std::vector<worker_proc>& workers);

}  // namespace sqllock::fault
