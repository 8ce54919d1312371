// The nemesis: injects one fault at a time on a fixed cadence while the workers run, and logs
// each with its CLOCK_MONOTONIC interval and target. Faults (names as logged and counted):
//   crash              SIGKILL of a worker process that holds a lock (the fleet restarts it)
//   pause-short        SIGSTOP … SIGCONT of a holder for L/4 (must be harmless)
//   pause-long         … for 1.5 L (a table lease runs out)
//   pause-xlong        … for 3 L
//   session-kill       pg_terminate_backend / KILL of a lock-holding session (PostgreSQL, MariaDB);
//                      --via pgbouncer: of one of PgBouncer's server sessions (the workers' locks
//                      keep none of their own), one inside a transaction if one is seen within L/4,
//                      logged with PgBouncer's pid, so that it excuses no worker's violation; the
//                      client whose transaction runs on it loses its connection
//   restart-fast       clean server restart (pg_ctl -m fast / SIGTERM)
//   restart-immediate  server crash (SIGKILL of every server process) and start
//   kill-primary       pg_auto_failover: SIGKILL of the primary's node, until the standby accepts
//                      writes; then "rejoin" of the killed node as the new standby
//   kill-node          Galera: SIGKILL of node 3, until it has been restarted and synced
// Server faults (pid 0) are the setup's (servers.hpp), spread evenly over the run.
// Network faults, on the lock connections of a holder's process (its proxy, fault/net_link.hpp;
// its sections still reach the server directly), from when the worker applied the order until it
// applied the heal (both on its clock, acknowledged through the board):
//   net-partition      silent partition for 1.5 L: no byte either way, no reset, new connections
//                      too — the lease runs out on the server while the holder's renewal hangs
//   net-stall          the same for L/2: one renewal stalls, the lease must survive it
//   net-latency        L of a steady L/20 added each way to every chunk
//   net-retransmit     L of retransmission-like stalls: each chunk held back L/10 more with
//                      probability 1/10, what follows it waiting behind it (a TCP stream cannot
//                      lose bytes; this is what a lost segment does to it)
// A partition prefers, waiting up to 2 L for it, a process whose section will last 2/3 L past
// the fault's start (the board says when a section is planned to end): a short section ends (its
// writes go around the proxy) and releases long before any lease runs out. The network faults run
// in a lane of their own beside the client and server faults (a short run has no room for them in
// one), the partition last, one at a time and never on a process another fault is hitting,
// wherever injects_network_faults (fault/config.hpp) says so.
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

  // Injects faults until `until_ns`; every pause and network fault is over when it returns.
  void run(std::int64_t until_ns);

  std::vector<fault_event> log() const;
  // Faults injected, by kind (failed attempts are not counted).
  std::map<std::string, int> counts() const;

 private:
  // One lane of faults from `first_at` on, every fault_every, while a fault has time to heal.
  void lane(const std::vector<std::string>& round, std::int64_t first_at, std::int64_t until_ns, bool with_servers);
  void inject(const std::string& kind);
  // A holder's process (else any living one) that no other fault is hitting, marked busy. With
  // `section_past`, the first choice is a process with a section planned to last past it (the only
  // one with `only_those`).
  std::optional<pid_t> pick_holder(std::int64_t section_past = 0, bool only_those = false);
  void done_with(pid_t pid);
  void pause(const std::string& kind, std::chrono::milliseconds d);
  void network(const std::string& kind);
  // Posts `o` to `pid`'s slot and waits for the worker to apply it; its time, or 0 if it did not.
  std::int64_t order(pid_t pid, const net_order& o);
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
  std::vector<pid_t> busy_;      // processes a fault is hitting now (guarded by mu_)
  std::int64_t last_start_ = 0;  // no fault starts after this (the run's end less quiet_ns())
  // No fault starts in the run's last 3 L + 2 s: the longest pause, and time to heal.
  std::int64_t quiet_ns() const { return (3 * cfg_.lease.count() + 2000) * 1'000'000; }
};

}  // namespace sqllock::fault
