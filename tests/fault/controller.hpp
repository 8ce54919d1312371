// The controller of a fault run: starts its private servers (servers.hpp; or an SQLite file),
// creates the schema, runs the worker fleet, the nemesis and a reaper for the configured time,
// kills every worker (the last fault), measures how long each resource takes to become
// acquirable, then reads the histories, the server's grant log and the counters, and runs the
// checkers. A refusal run (--expect-refusal) only waits for each worker's first lock calls.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "fault/checker.hpp"
#include "fault/config.hpp"
#include "fault/servers.hpp"

namespace sqllock::fault {

struct controller_args {
  run_config cfg;
  std::string self;           // this program, to start workers
  server_scripts scripts;     // scripts/test-servers.sh, scripts/ha-servers.sh
  std::filesystem::path dir;  // working directory of the run (histories, server, logs)
};

// Runs everything and returns the checkers' report. Throws std::runtime_error when the run
// cannot be set up (server does not start).
report run_controller(const controller_args& args);

// The report as text: configuration, metrics (faults-* count the faults by kind), violations, examples.
std::string format_report(const run_config& cfg, const report& r);

}  // namespace sqllock::fault
