// The database servers of one fault run, started and stopped through a script in a directory of
// their own: the nemesis restarts and kills them, so they must never be the servers other tests
// share. Three setups (run_config::setup) behind one interface:
//   standalone  one PostgreSQL or MariaDB server (scripts/test-servers.sh); faults: restart-fast,
//               restart-immediate
//   pgaf        pg_auto_failover: monitor, primary and synchronous standby (scripts/ha-servers.sh),
//               reached through a multi-host URI (target_session_attrs=read-write); fault:
//               kill-primary (SIGKILL of the primary's whole node, until the standby, promoted,
//               accepts writes), followed by the rejoin of the killed node as the new standby
//   galera      three MariaDB Galera nodes (scripts/ha-servers.sh), worker i on node i % 3 + 1;
//               fault: kill-node (SIGKILL of node 3, down for 2 L, then started until synced)
#pragma once

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
  // Administrator URIs of the servers whose sessions the nemesis may kill.
  virtual std::vector<std::string> session_uris() const { return {uri()}; }

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
