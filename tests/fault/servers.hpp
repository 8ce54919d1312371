// The database servers of one fault run, started and stopped through a script in a directory of
// their own: the nemesis restarts and kills them, so they must never be the servers other tests
// share. Three setups (run_config::setup) behind one interface:
//   standalone  one PostgreSQL or MariaDB server (scripts/test-servers.sh); faults: restart-fast,
//               restart-immediate. With run_config::via_pgbouncer, the script's PgBouncer
//               (transaction pooling) in front of that PostgreSQL: the workers' lock URI is
//               PgBouncer's with ?prepare=off, their sections' the server's, and the sessions the
//               nemesis kills are PgBouncer's server connections; the restarts are PostgreSQL's,
//               behind PgBouncer, which stays up and reconnects
//   pgaf        pg_auto_failover: monitor, primary and synchronous standby (scripts/ha-servers.sh),
//               reached through a multi-host URI (target_session_attrs=read-write); fault:
//               kill-primary (SIGKILL of the primary's whole node, until the standby, promoted,
//               accepts writes), followed by the rejoin of the killed node as the new standby
//   galera      three MariaDB Galera nodes (scripts/ha-servers.sh), worker i on node i % 3 + 1;
//               fault: kill-node (SIGKILL of node 3, down for 2 L, then started until synced)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fault/config.hpp"

namespace sqllock::fault {

// One step of a server fault, on the CLOCK_MONOTONIC clock.
struct server_event {
  std::string kind;
  std::int64_t start = 0, end = 0;
};

class server_setup {
 public:
  virtual ~server_setup() = default;  // stops the servers and removes their directory

  // An administrator URI (it may kill sessions): schema, reaper, liveness probes, checks.
  virtual const std::string& uri() const = 0;
  // The URI worker process `slot` connects through.
  virtual std::string worker_uri(int /*slot*/) const { return uri(); }
  // The URI worker process `slot`'s critical sections write through, around what worker_uri()
  // passes through (a pooler); the same URI without one.
  virtual std::string data_uri(int slot) const { return worker_uri(slot); }
  // Administrator URIs of the servers whose sessions the nemesis may kill.
  virtual std::vector<std::string> session_uris() const { return {uri()}; }
  // The processes whose sessions on those servers the nemesis may kill, given the living
  // workers: the workers themselves, or the pooler that holds the server sessions for them.
  virtual std::vector<pid_t> session_clients(const std::vector<pid_t>& workers) const { return workers; }
  // Whether those are a pooler's server sessions, which serve a client only inside a transaction.
  virtual bool pooled() const { return false; }

  // The setup's server faults, in the order a run rotates through them.
  virtual std::vector<std::string> fault_kinds() const = 0;
  // Injects `kind` (one of fault_kinds()) and returns once the servers are whole again, with
  // the steps that happened (a kill-primary is followed by a "rejoin"); empty when it failed.
  virtual std::vector<server_event> inject(const std::string& kind) = 0;
};

struct server_scripts {
  std::string standalone;  // scripts/test-servers.sh
  std::string ha;          // scripts/ha-servers.sh
};

// Starts cfg.setup (standalone: the server of cfg.dialect only) in a directory under `run_dir`;
// null for SQLite, which has no server. Throws std::runtime_error when it fails to start (the
// script's output is in run_dir/servers.log). The scripts run through test::server_control
// (support/server_control.hpp), their output appended to run_dir/servers.log.
std::unique_ptr<server_setup> start_servers(const run_config& cfg, const server_scripts& scripts,
                                            const std::filesystem::path& run_dir);

}  // namespace sqllock::fault
