// The nemesis: injects one fault at a time on a fixed cadence while the workers run, and logs
// each with its CLOCK_MONOTONIC interval and target. Faults (names as logged and counted):
//   crash              SIGKILL of a worker process that holds a lock (the fleet restarts it)
//   pause-short        SIGSTOP … SIGCONT of a holder for L/4 (must be harmless)
//   pause-long         … for 1.5 L (a table lease runs out)
//   pause-xlong        … for 3 L
//   session-kill       pg_terminate_backend / KILL of a lock-holding session (PostgreSQL, MariaDB)
//   restart-fast       clean server restart (pg_ctl -m fast / SIGTERM)
//   restart-immediate  server crash (SIGKILL of every server process) and start
//   kill-primary       pg_auto_failover: SIGKILL of the primary's node, until the standby accepts
//                      writes; then "rejoin" of the killed node as the new standby
//   kill-node          Galera: SIGKILL of node 3, until it has been restarted and synced
// Server faults (pid 0) are the setup's (servers.hpp), spread evenly over the run.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fault/board.hpp"
#include "fault/config.hpp"
#include "fault/fleet.hpp"
#include "fault/servers.hpp"

namespace sqllock::fault {

struct fault_event {
  std::string kind;
  pid_t pid = 0;  // the targeted worker; 0 for server faults
  std::int64_t start = 0, end = 0;
  std::int64_t session = 0;   // session-kill: the killed session
  std::int64_t found_at = 0;  // session-kill: when the query that found it as a holder began
};

class nemesis {
 public:
  // `servers` is null for SQLite (no session or server faults); their session_uris() are where
  // sessions are found and killed.
  nemesis(const run_config& cfg, fleet& workers, board& holders, server_setup* servers);

  // Injects faults until `until_ns`; every pause is over when it returns.
  void run(std::int64_t until_ns);

  std::vector<fault_event> log() const;
  // Faults injected, by kind (failed attempts are not counted).
  std::map<std::string, int> counts() const;

 private:
  void inject(const std::string& kind);
  std::optional<pid_t> pick_holder();
  void pause(const std::string& kind, std::chrono::milliseconds d);
  void session_kill();
  void server_fault(const std::string& kind);
  void record(fault_event e);

  const run_config& cfg_;
  fleet& workers_;
  board& holders_;
  server_setup* servers_;
  std::mt19937_64 rng_;
  mutable std::mutex mu_;
  std::vector<fault_event> log_;
};

}  // namespace sqllock::fault
