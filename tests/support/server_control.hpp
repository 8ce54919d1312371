// Starting, stopping, killing and restarting private test servers through their scripts: one
// server of scripts/test-servers.sh (the one ctest's `servers` fixture started: for_tests; or one
// in a directory of its own: the fault harness's), or a high-availability cluster of
// scripts/ha-servers.sh (the fault harness's pgaf and galera setups). Every restart test and
// tests/fault/servers.cpp go through this.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sqllock/database.hpp"
#include "support/program.hpp"
#include "support/test_env.hpp"

namespace sqllock::test {

// Runs a server script's command line (argv[0] a path) to completion with `env` added to the
// environment (an empty value removes a variable). Returns its exit code and output; out must
// hold its stdout when `want_stdout` (else the runner may send the output elsewhere, e.g. a log).
using script_runner = std::function<run_result(const std::vector<std::string>& argv,
                                               const std::map<std::string, std::string>& env, bool want_stdout)>;

// The tests' runner: run_program in a fresh temporary directory, stdout and stderr returned
// (for failure messages); killed, failing the test, after `timeout`.
script_runner captured_runner(std::chrono::seconds timeout = std::chrono::seconds(180));

class server_control {
 public:
  // What `script` manages in `state_dir`, run through `runner`. `dialect` picks the server the
  // actions (start, stop, kill, restart) act on: test-servers.sh's PostgreSQL or MariaDB (for a
  // cluster of ha-servers.sh, the dialect of its nodes).
  server_control(std::string script, std::filesystem::path state_dir, dialect_kind dialect,
                 script_runner runner = captured_runner());

  // The server of `t`'s dialect that scripts/test-servers.sh started for this test run (the env
  // file names the script, its directory and the server's data directory); nullopt for SQLite
  // and for servers it did not start (SQLLOCK_TEST_*_URI pointing elsewhere): those cannot be
  // restarted from here.
  static std::optional<server_control> for_tests(const target& t);

  // One server of test-servers.sh.

  // The command line of `action`: start, stop, kill (SIGKILL of every server process, a crash)
  // or restart (a clean shutdown and start on the same port and data).
  std::vector<std::string> command(const std::string& action) const;
  // Runs `action` and returns its exit code and output.
  run_result run(const std::string& action) const;
  // Runs `actions` in order, stopping at the first that fails; fails the calling test then.
  void must(const std::vector<std::string>& actions) const;
  // `test-servers.sh start` in state_dir with only the server of the dialect: the script starts
  // no server whose URI is in the environment, so the other one is named with a URI nothing
  // connects to; this server's variable is removed, so that a caller's setting cannot redirect
  // the servers' users (the fault harness's faults) to another server; nor can a PgBouncer's
  // (SQLLOCK_TEST_PGBOUNCER_URI and _OWNER_URI are removed: PostgreSQL's gets the script's own).
  run_result start_only() const;
  // The server's administrator URI (SQLLOCK_TEST_PG_URI or SQLLOCK_TEST_MYSQL_URI in state_dir/env).
  std::string uri() const;

  // Anything `script` does in state_dir.

  // Runs `script command state_dir args…` with `env` added to the environment (see script_runner).
  run_result script(const std::string& command, const std::vector<std::string>& args = {},
                    const std::map<std::string, std::string>& env = {}, bool want_stdout = false) const;
  // `script stop state_dir`: stops whatever the script started there.
  run_result stop_all() const;
  // A setting the script wrote to state_dir/env; throws std::runtime_error naming the file when it
  // is missing or empty (the start did not finish: see the script's output).
  std::string setting(const std::string& key) const;

  // Clusters of ha-servers.sh (the script must be it).

  // `start-pgaf` or `start-galera` (cluster "pgaf", "galera"); a failed start leaves what did
  // start for stop_all().
  run_result start_cluster(const std::string& cluster) const;
  // SIGKILLs the pg_auto_failover primary's whole node; its name (node1, node2), nullopt when the
  // kill failed.
  std::optional<std::string> pgaf_kill_primary() const;
  // Restarts killed node `node` until it is a secondary again; false when that failed.
  bool pgaf_rejoin(const std::string& node) const;
  // SIGKILLs Galera node `node` (1..3); false when that failed.
  bool galera_kill(int node) const;
  // Starts Galera node `node` until it is synced; false when that failed.
  bool galera_start(int node) const;

 private:
  std::string script_;
  std::filesystem::path state_dir_;
  dialect_kind dialect_;
  std::string suffix_;  // "pg" or "my"
  script_runner runner_;
};

}  // namespace sqllock::test
