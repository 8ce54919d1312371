#include "fault/servers.hpp"

#include <cctype>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "fault/history.hpp"
#include "fault/spawn.hpp"
#include "sqllock/error.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {

std::map<std::string, std::string> read_env_file(const std::filesystem::path& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

namespace {

// Servers that a script starts in `dir` (writing dir/env), acts on and stops: `script CMD DIR …`.
class scripted_setup : public server_setup {
 protected:
  scripted_setup(std::string script, std::filesystem::path dir, const std::string& start,
                 const std::map<std::string, std::string>& env = {})
      : script_(std::move(script)), dir_(std::move(dir)), log_((dir_.parent_path() / "servers.log").string()) {
    if (call(start, {}, env) != 0) {
      call("stop");  // what did start (a cluster's first nodes)
      throw std::runtime_error(std::filesystem::path(script_).filename().string() + " " + start + " failed; see " + log_);
    }
    vars_ = read_env_file(dir_ / "env");
  }

 public:
  ~scripted_setup() override {
    try {
      call("stop");
    } catch (...) {
    }
  }
  scripted_setup(const scripted_setup&) = delete;
  scripted_setup& operator=(const scripted_setup&) = delete;

 protected:
  // Runs `script cmd dir args…`; its exit code. `output` receives its stdout (else logged).
  int call(const std::string& cmd, const std::vector<std::string>& args = {},
           const std::map<std::string, std::string>& env = {}, std::string* output = nullptr) {
    std::vector<std::string> argv = {script_, cmd, dir_.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, log_, env, output);
  }
  // A setting from dir/env; throws when it is missing or empty.
  std::string var(const std::string& key) const {
    const auto it = vars_.find(key);
    if (it == vars_.end() || it->second.empty()) throw std::runtime_error("no " + key + " in " + (dir_ / "env").string());
    return it->second;
  }

 private:
  std::string script_;
  std::filesystem::path dir_;
  std::string log_;
  std::map<std::string, std::string> vars_;
};

// One PostgreSQL or MariaDB server of scripts/test-servers.sh.
class standalone_server : public scripted_setup {
 public:
  // test-servers.sh starts no server whose URI is already in the environment: naming the other
  // one (with a URI nothing connects to) starts only the one this run needs. The real variable
  // of our own server is removed so a caller's setting cannot redirect the faults elsewhere.
  standalone_server(const std::string& script, const std::filesystem::path& dir, bool pg)
      : scripted_setup(script, dir, "start",
                       {{"SQLLOCK_TEST_PG_URI", pg ? "" : "postgresql://unused.invalid/none"},
                        {"SQLLOCK_TEST_MYSQL_URI", pg ? "mysql://unused.invalid/none" : ""}}),
        suffix_(pg ? "pg" : "my"), uri_(var(pg ? "SQLLOCK_TEST_PG_URI" : "SQLLOCK_TEST_MYSQL_URI")) {}

  const std::string& uri() const override { return uri_; }
  std::vector<std::string> fault_kinds() const override { return {"restart-fast", "restart-immediate"}; }

  // Restarts the server on the same port and data: fast = clean shutdown, immediate = SIGKILL of
  // every server process (a crash; PostgreSQL's "-m immediate" and MariaDB's kill -9 alike).
  std::vector<server_event> inject(const std::string& kind) override {
    const std::int64_t start = mono_ns();
    bool ok = false;
    if (kind == "restart-fast") {
      ok = call("restart-" + suffix_) == 0;
    } else {
      const bool killed = call("kill-" + suffix_) == 0;
      ok = call("start-" + suffix_) == 0 && killed;
    }
    if (!ok) return {};
    return {{kind, start, mono_ns()}};
  }

 private:
  std::string suffix_;  // "pg" or "my"
  std::string uri_;
};

// pg_auto_failover of scripts/ha-servers.sh: the workers reach the primary through a multi-host
// URI, on which libpq picks the writable node for each new connection.
class pgaf_cluster : public scripted_setup {
 public:
  pgaf_cluster(const std::string& script, const std::filesystem::path& dir)
      : scripted_setup(script, dir, "start-pgaf"), uri_(var("SQLLOCK_TEST_PGAF_URI")) {}

  const std::string& uri() const override { return uri_; }
  std::vector<std::string> fault_kinds() const override { return {"kill-primary"}; }

  // kill-primary lasts from the SIGKILL of the primary's node (when the kill command returns:
  // every process of the node has exited; the script's lookups before the kill take up to a
  // second on a busy machine) until the promoted standby accepts writes (the failover); then the
  // killed node rejoins as the standby ("rejoin"), so that the next kill has a node to fail over
  // to.
  std::vector<server_event> inject(const std::string&) override {
    std::string node;
    if (call("pgaf-kill-primary", {}, {}, &node) != 0) return {};
    const std::int64_t start = mono_ns();
    while (!node.empty() && std::isspace(static_cast<unsigned char>(node.back()))) node.pop_back();
    node = node.substr(node.find_last_of('\n') + 1);  // the last line: the killed node's name
    std::vector<server_event> steps{{"kill-primary", start, wait_writable(start, node)}};
    const std::int64_t rejoin = mono_ns();
    if (call("pgaf-rejoin", {node}) == 0)
      steps.push_back({"rejoin", rejoin, mono_ns()});
    else
      std::cerr << "nemesis: pgaf-rejoin " << node << " failed\n";
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
    const std::string port = var(killed == "node1" ? "SQLLOCK_TEST_PGAF_NODE2_PORT" : "SQLLOCK_TEST_PGAF_NODE1_PORT");
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
        if (!test::sql(db, "SELECT pg_current_xact_id() WHERE current_setting('transaction_read_only') = 'off'").rows.empty())
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
      : scripted_setup(script, dir, "start-galera"), downtime_(downtime) {
    for (int n = 1; n <= kNodes; ++n) nodes_.push_back(var("SQLLOCK_TEST_GALERA_URI_" + std::to_string(n)));
  }

  const std::string& uri() const override { return nodes_.front(); }
  std::string worker_uri(int slot) const override { return nodes_[static_cast<std::size_t>(slot % kNodes)]; }
  std::vector<std::string> session_uris() const override { return nodes_; }
  std::vector<std::string> fault_kinds() const override { return {"kill-node"}; }

  // kill-node lasts from the SIGKILL of node 3 (when the kill command returns) until it is back
  // and synced.
  std::vector<server_event> inject(const std::string& kind) override {
    if (call("galera-kill", {std::to_string(kVictim)}) != 0) return {};
    const std::int64_t start = mono_ns();
    std::this_thread::sleep_for(downtime_);
    if (call("galera-start", {std::to_string(kVictim)}) != 0)
      std::cerr << "nemesis: galera-start " << kVictim << " failed\n";
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
      return std::make_unique<standalone_server>(scripts.standalone, run_dir / "server",
                                                 cfg.dialect == dialect_kind::postgresql);
    case setup_kind::pgaf: return std::make_unique<pgaf_cluster>(scripts.ha, run_dir / "pgaf");
    case setup_kind::galera: return std::make_unique<galera_cluster>(scripts.ha, run_dir / "galera", cfg.lease * 2);
  }
  return nullptr;
}

}  // namespace sqllock::fault
