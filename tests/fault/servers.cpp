#include "fault/servers.hpp"

#include <deque>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "fault/history.hpp"
#include "fault/spawn.hpp"
#include "sqllock/error.hpp"
#include "support/fresh_database.hpp"
#include "support/server_control.hpp"

namespace sqllock::fault {
namespace {

// The fault run's script runner: a script's stdout and stderr are appended to `log` as it runs
// (its stdout is also returned when wanted).
test::script_runner logged_to(std::string log) {
  return [log = std::move(log)](const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                                bool want_stdout) {
    test::run_result r{0, "", ""};
    r.code = run(argv, log, env, want_stdout ? &r.out : nullptr);
    return r;
  };
}

// The last `n` lines of the file at `path` (fewer when it is shorter or missing).
std::vector<std::string> last_lines(const std::string& path, std::size_t n) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > n) lines.pop_front();
  }
  return {lines.begin(), lines.end()};
}

// Servers that a script starts in directory `dir` (writing dir/env) and that are stopped, with
// whatever of them did start, when the setup ends or its start fails.
class scripted_setup : public server_setup {
 protected:
  // `start` starts them through the setup's control (what it runs is named `what` in errors).
  scripted_setup(const std::string& script, const std::filesystem::path& dir, dialect_kind dialect,
                 const std::string& what, const std::function<test::run_result(const test::server_control&)>& start)
      : log_((dir.parent_path() / "servers.log").string()), ctl_(script, dir, dialect, logged_to(log_)) {
    // Once more after a failure: on a loaded machine a cluster's start can run out of its script's
    // time, or a port picked free can be taken before its node binds it.
    for (int attempt = 1;; ++attempt) {
      if (start(ctl_).code == 0) return;
      ctl_.stop_all();
      if (attempt == 2) break;
      std::cerr << "fault run: " << what << " failed; starting again\n";
    }
    // The run directory goes with the run: the log's end is part of the message.
    std::string message = std::filesystem::path(script).filename().string() + " " + what +
                          " failed twice; the end of " + log_ + ":";
    for (const auto& line : last_lines(log_, 6)) message += "\n  servers.log: " + line;
    throw std::runtime_error(message);
  }

 public:
  ~scripted_setup() override {
    try {
      ctl_.stop_all();
    } catch (...) {
    }
  }
  scripted_setup(const scripted_setup&) = delete;
  scripted_setup& operator=(const scripted_setup&) = delete;

 protected:
  const test::server_control& ctl() const { return ctl_; }

 private:
  std::string log_;
  test::server_control ctl_;
};

// One PostgreSQL or MariaDB server of scripts/test-servers.sh, started alone
// (test::server_control::start_only).
class standalone_server : public scripted_setup {
 public:
  standalone_server(const std::string& script, const std::filesystem::path& dir, dialect_kind dialect)
      : scripted_setup(script, dir, dialect, "start", [](const test::server_control& c) { return c.start_only(); }),
        uri_(ctl().uri()) {}

  const std::string& uri() const override { return uri_; }
  std::vector<std::string> fault_kinds() const override { return {"restart-fast", "restart-immediate"}; }

  // Restarts the server on the same port and data: fast = clean shutdown, immediate = SIGKILL of
  // every server process (a crash; PostgreSQL's "-m immediate" and MariaDB's kill -9 alike).
  std::vector<server_event> inject(const std::string& kind) override {
    const std::int64_t start = mono_ns();
    bool ok = false;
    if (kind == "restart-fast") {
      ok = ctl().run("restart").code == 0;
    } else {
      const bool killed = ctl().run("kill").code == 0;
      ok = ctl().run("start").code == 0 && killed;
    }
    if (!ok) return {};
    return {{kind, start, mono_ns()}};
  }

 private:
  std::string uri_;
};

// The standalone PostgreSQL behind the PgBouncer that scripts/test-servers.sh starts in front of
// it (transaction pooling; the script's header), which the workers' locks go through.
class pooled_server : public standalone_server {
 public:
  pooled_server(const std::string& script, const std::filesystem::path& dir)
      : standalone_server(script, dir, dialect_kind::postgresql),
        pooler_uri_(ctl().setting("SQLLOCK_TEST_PGBOUNCER_OWNER_URI") + "?prepare=off"),
        pidfile_(ctl().setting("SQLLOCK_TEST_PGBOUNCER_PIDFILE")) {}

  std::string worker_uri(int) const override { return pooler_uri_; }
  std::string data_uri(int) const override { return uri(); }
  // PgBouncer's process (its pid file is read each time): its server connections are the
  // sessions the workers' locks use.
  std::vector<pid_t> session_clients(const std::vector<pid_t>&) const override {
    pid_t pid = 0;
    std::ifstream(pidfile_) >> pid;
    if (pid <= 0) return {};
    return {pid};
  }
  bool pooled() const override { return true; }

 private:
  std::string pooler_uri_;
  std::string pidfile_;
};

// A cluster of scripts/ha-servers.sh: `start-<cluster>`.
std::function<test::run_result(const test::server_control&)> start_cluster(std::string cluster) {
  return [cluster = std::move(cluster)](const test::server_control& c) { return c.start_cluster(cluster); };
}

// pg_auto_failover of scripts/ha-servers.sh: the workers reach the primary through a multi-host
// URI, on which libpq picks the writable node for each new connection.
class pgaf_cluster : public scripted_setup {
 public:
  pgaf_cluster(const std::string& script, const std::filesystem::path& dir)
      : scripted_setup(script, dir, dialect_kind::postgresql, "start-pgaf", start_cluster("pgaf")),
        uri_(ctl().setting("SQLLOCK_TEST_PGAF_URI")) {}

  const std::string& uri() const override { return uri_; }
  std::vector<std::string> fault_kinds() const override { return {"kill-primary"}; }

  // kill-primary lasts from the SIGKILL of the primary's node (when the kill command returns:
  // every process of the node has exited; the script's lookups before the kill take up to a
  // second on a busy machine) until the promoted standby accepts writes (the failover); then the
  // killed node rejoins as the standby ("rejoin"), so that the next kill has a node to fail over
  // to.
  std::vector<server_event> inject(const std::string&) override {
    const auto node = ctl().pgaf_kill_primary();
    if (!node) return {};
    const std::int64_t start = mono_ns();
    std::vector<server_event> steps{{"kill-primary", start, wait_writable(start, *node)}};
    const std::int64_t rejoin = mono_ns();
    if (ctl().pgaf_rejoin(*node))
      steps.push_back({"rejoin", rejoin, mono_ns()});
    else
      std::cerr << "nemesis: pgaf-rejoin " << *node << " failed\n";
    return steps;
  }

 private:
  // When the surviving node first commits a read-write transaction with a transaction id (its
  // commit is a WAL record, which waits for the synchronous standby if there is one; a standby
  // refuses to assign one), polled every 20 ms on a session opened before its promotion, which
  // the promotion keeps: a new connection per poll costs most of a second on a busy machine, and
  // the workers' own reconnections would often beat it. Read-write, as a new connection through
  // the multi-host URI needs it: pg_auto_failover promotes the standby first with
  // default_transaction_read_only on (stop_replication) and lifts that a few seconds later
  // (wait_primary), once the old primary must have demoted itself. Gives up after 60 s.
  std::int64_t wait_writable(std::int64_t since, const std::string& killed) const {
    const std::string port = ctl().setting(killed == "node1" ? "SQLLOCK_TEST_PGAF_NODE2_PORT"
                                                             : "SQLLOCK_TEST_PGAF_NODE1_PORT");
    // The multi-host URI with that node alone, of any role.
    std::string direct = uri_;
    const auto at = direct.find('@') + 1;
    direct.replace(at, direct.find('/', at) - at, "127.0.0.1:" + port);
    if (const auto t = direct.find("target_session_attrs=read-write"); t != std::string::npos)
      direct.replace(t, std::string_view("target_session_attrs=read-write").size(), "target_session_attrs=any");
    database_options o;
    o.pool_size = 1;
    o.connect_timeout = std::chrono::seconds(1);
    const database db(direct, o);
    while (mono_ns() - since < 60'000'000'000) {
      try {
        if (!test::sql(db, "SELECT pg_current_xact_id() WHERE current_setting('transaction_read_only') = 'off'")
                 .rows.empty())
          return mono_ns();
      } catch (const error&) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::cerr << "nemesis: no primary accepted writes within 60 s of kill-primary\n";
    return mono_ns();
  }

  std::string uri_;
};

// Three MariaDB Galera nodes of scripts/ha-servers.sh. The controller (schema, reaper, probes)
// uses node 1; the nemesis kills node 3.
class galera_cluster : public scripted_setup {
 public:
  static constexpr int kNodes = 3;
  static constexpr int kVictim = 3;

  galera_cluster(const std::string& script, const std::filesystem::path& dir, std::chrono::milliseconds downtime)
      : scripted_setup(script, dir, dialect_kind::mysql, "start-galera", start_cluster("galera")), downtime_(downtime) {
    for (int n = 1; n <= kNodes; ++n) nodes_.push_back(ctl().setting("SQLLOCK_TEST_GALERA_URI_" + std::to_string(n)));
  }

  const std::string& uri() const override { return nodes_.front(); }
  std::string worker_uri(int slot) const override { return nodes_[static_cast<std::size_t>(slot % kNodes)]; }
  std::vector<std::string> session_uris() const override { return nodes_; }
  std::vector<std::string> fault_kinds() const override { return {"kill-node"}; }

  // kill-node lasts from the SIGKILL of node 3 (when the kill command returns) until it is back
  // and synced.
  std::vector<server_event> inject(const std::string& kind) override {
    if (!ctl().galera_kill(kVictim)) return {};
    const std::int64_t start = mono_ns();
    std::this_thread::sleep_for(downtime_);
    if (!ctl().galera_start(kVictim)) std::cerr << "nemesis: galera-start " << kVictim << " failed\n";
    return {{kind, start, mono_ns()}};
  }

 private:
  std::chrono::milliseconds downtime_;
  std::vector<std::string> nodes_;
};

}  // namespace

std::unique_ptr<server_setup> start_servers(const run_config& cfg, const server_scripts& scripts,
                                            const std::filesystem::path& run_dir) {
  switch (cfg.setup) {
    case setup_kind::standalone:
      if (cfg.dialect == dialect_kind::sqlite) return nullptr;
      if (cfg.via_pgbouncer) return std::make_unique<pooled_server>(scripts.standalone, run_dir / "server");
      return std::make_unique<standalone_server>(scripts.standalone, run_dir / "server", cfg.dialect);
    case setup_kind::pgaf: return std::make_unique<pgaf_cluster>(scripts.ha, run_dir / "pgaf");
    case setup_kind::galera: return std::make_unique<galera_cluster>(scripts.ha, run_dir / "galera", cfg.lease * 2);
  }
  return nullptr;
}

}  // namespace sqllock::fault
