// Times when this machine or the lock server was too starved to run anyone: the liveness checks
// (queue-stall, liveness) cannot ask a hand-off to be on time while nobody could run it. Measured
// by the controller beside the run, independently of the lock:
//   machine-stall  a thread that sleeps 10 ms at a time woke 100 ms or more late (every process
//                  of the run waits for a core then: two cores, six fault runs, their servers)
//   server-stall   `SELECT 1` on a connection of its own, straight to the lock server (no proxy,
//                  no table, no lock) took 100 ms or more
// Each is an interval on CLOCK_MONOTONIC. Only liveness checks may read them: a safety check
// (overlap, fence order, told-before-granted) holds however slow anything was.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fault/nemesis.hpp"

namespace sqllock::fault {

class stall_monitor {
 public:
  // Watches the machine, and the server at `server_uri` unless it is empty (SQLite).
  explicit stall_monitor(const std::string& server_uri);
  ~stall_monitor();  // stops watching
  stall_monitor(const stall_monitor&) = delete;
  stall_monitor& operator=(const stall_monitor&) = delete;

  // The stalls seen so far, as fault_events with pid 0 (kinds machine-stall, server-stall).
  std::vector<fault_event> stalls() const;

 private:
  void record(const char* kind, std::int64_t start, std::int64_t end);

  mutable std::mutex mu_;
  std::vector<fault_event> stalls_;
  std::jthread machine_, server_;  // last: stop first
};

}  // namespace sqllock::fault
