// The PostgreSQL server's side of a sqllock_contention run (server_watch.hpp).
#include "server_watch.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <pqxx/pqxx>
#include <sstream>

#include "contender.hpp"

namespace sqllock::contention {

struct counter_connection {
  pqxx::connection c;
  explicit counter_connection(const std::string& uri) : c(uri) {}
};

namespace {

// admin_uri with the database `postgres` instead of its own (a later dbname wins in libpq).
std::string postgres_database(const std::string& uri) {
  const bool is_uri = uri.rfind("postgresql://", 0) == 0 || uri.rfind("postgres://", 0) == 0;
  if (!is_uri) return uri + " dbname=postgres";
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + "dbname=postgres";
}

struct proc_stat {
  std::string comm;
  long ppid = 0;
  double own_s = 0;       // utime + stime
  double children_s = 0;  // cutime + cstime: the reaped children's
};

std::optional<proc_stat> read_stat(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  const auto open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  proc_stat s;
  s.comm = text.substr(open + 1, close - open - 1);
  std::istringstream fields(text.substr(close + 2));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string x; fields >> x && f.size() < 15;) f.push_back(x);
  if (f.size() < 15) return std::nullopt;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  s.ppid = std::atol(f[1].c_str());
  s.own_s = (std::atof(f[11].c_str()) + std::atof(f[12].c_str())) / tick;
  s.children_s = (std::atof(f[13].c_str()) + std::atof(f[14].c_str())) / tick;
  return s;
}

// The CPU time a live process has used, from the scheduler's own count (/proc/PID/sched,
// se.sum_exec_runtime in ms), else from /proc/PID/stat's utime + stime: on this project's VMs the
// latter stay near zero for a process that runs in short bursts between timer ticks.
double runtime_s(long pid, const proc_stat& s) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/sched");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("se.sum_exec_runtime", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return std::atof(line.c_str() + colon + 1) / 1000;
  }
  return s.own_s;
}

// CPU seconds used so far by the postmaster and each of its live children, by pid.
std::map<long, double> server_cpu(long postmaster) {
  std::map<long, double> out;
  if (const auto pm = read_stat(postmaster)) out[postmaster] = runtime_s(postmaster, *pm);
  if (DIR* dir = opendir("/proc")) {
    while (const dirent* e = readdir(dir)) {
      const long pid = std::atol(e->d_name);
      if (pid <= 0) continue;
      if (const auto s = read_stat(pid); s && s->ppid == postmaster) out[pid] = runtime_s(pid, *s);
    }
    closedir(dir);
  }
  return out;
}

// The CPU the server's processes alive at `after` used since `before` (all of it for those born
// since). A process that ended in between is left out: the kernel hands its time to the
// postmaster only as tick-sampled utime + stime, which are unreliable here.
std::optional<double> cpu_between(const std::map<long, double>& before, const std::map<long, double>& after) {
  if (before.empty() || after.empty()) return std::nullopt;
  double total = 0;
  for (const auto& [pid, t] : after) {
    const auto b = before.find(pid);
    total += t - (b == before.end() ? 0 : b->second);
  }
  return total;
}

std::int64_t count1(pqxx::connection& c, const std::string& sql, const std::string& database) {
  pqxx::nontransaction tx(c);
  const auto r = tx.exec_params(sql, database);
  return r.empty() || r[0][0].is_null() ? 0 : r[0][0].as<std::int64_t>();
}

constexpr const char* kTransactions =
    "SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1),"
    " pg_snapshot_xmax(pg_current_snapshot())::text::bigint";
constexpr const char* kStatements =
    "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements"
    " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)";
constexpr const char* kConnections =
    "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'";

}  // namespace

server_watch::server_watch(const std::string& admin_uri) {
  {
    pqxx::connection c(admin_uri);
    figures_.database = c.dbname();
  }
  sampler_uri_ = postgres_database(admin_uri);
  try {
    conn_ = std::make_unique<counter_connection>(sampler_uri_);
  } catch (const std::exception&) {
    sampler_uri_ = admin_uri;
    conn_ = std::make_unique<counter_connection>(sampler_uri_);
    figures_.note = "samplers in the clients' database (their transactions are counted); ";
  }
  // Statements: only when the server loads pg_stat_statements (scripts/bench.sh does).
  try {
    pqxx::nontransaction tx(conn_->c);
    const auto loaded = tx.exec("SELECT current_setting('shared_preload_libraries') LIKE '%pg_stat_statements%'");
    if (loaded[0][0].as<bool>()) {
      tx.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      has_statements_ = true;
    } else {
      figures_.note += "statements: pg_stat_statements is not loaded; ";
    }
  } catch (const std::exception& e) {
    figures_.note += std::string("statements: ") + e.what() + "; ";
  }
}

server_watch::~server_watch() = default;

server_watch::counters server_watch::read_counters() {
  counters c;
  try {
    pqxx::nontransaction tx(conn_->c);
    const auto r = tx.exec_params(kTransactions, figures_.database);
    if (!r[0][0].is_null()) c.transactions = r[0][0].as<std::int64_t>();
    c.xids = r[0][1].as<std::int64_t>();
  } catch (const std::exception& e) {
    figures_.note += std::string("transactions: ") + e.what() + "; ";
  }
  if (has_statements_) {
    try {
      c.statements = count1(conn_->c, kStatements, figures_.database);
    } catch (const std::exception& e) {
      figures_.note += std::string("statements: ") + e.what() + "; ";
    }
  }
  return c;
}

void server_watch::run(std::int64_t start_ns, std::int64_t end_ns) {
  at_go_ = read_counters();
  window_ = std::jthread([this, start_ns, end_ns] {
    try {
      pqxx::connection c(sampler_uri_);
      long postmaster = 0;
      if (const auto me = read_stat(c.backendpid()); me) {
        if (const auto pm = read_stat(me->ppid); pm && (pm->comm == "postgres" || pm->comm == "postmaster"))
          postmaster = me->ppid;
      }
      sleep_until_ns(start_ns);
      const std::int64_t cpu0_ns = mono_ns();
      const auto cpu0 = postmaster ? server_cpu(postmaster) : std::map<long, double>{};
      // The CPU's second reading comes 100 ms before the end: at the end the client processes
      // close their connections, and an ended backend's time is not counted.
      const std::int64_t cpu1_at = std::max(start_ns, end_ns - 100'000'000);
      std::map<long, double> cpu1;
      std::int64_t cpu1_ns = 0, peak = 0;
      for (std::int64_t next = start_ns; next < end_ns; next += 100'000'000) {
        sleep_until_ns(next);
        peak = std::max(peak, count1(c, kConnections, figures_.database));
        if (cpu1_ns == 0 && mono_ns() >= cpu1_at) {
          cpu1_ns = mono_ns();
          if (postmaster) cpu1 = server_cpu(postmaster);
        }
      }
      figures_.peak_connections = peak;
      if (const auto used = cpu_between(cpu0, cpu1); used && cpu1_ns > cpu0_ns)
        figures_.server_cpu_cores = *used / (static_cast<double>(cpu1_ns - cpu0_ns) / 1e9);
      if (!postmaster) note_window_ += "server CPU: the server's processes are not on this machine; ";
    } catch (const std::exception& e) {
      note_window_ += std::string("connections: ") + e.what() + "; ";
    }
  });
  prober_ = std::jthread([this, start_ns, end_ns] {
    try {
      pqxx::connection c(sampler_uri_);
      std::vector<double> ms;
      std::int64_t next = start_ns;
      while (next < end_ns) {
        sleep_until_ns(next);
        const std::int64_t t0 = mono_ns();
        {
          pqxx::nontransaction tx(c);
          tx.exec("SELECT 1");
        }
        const std::int64_t t1 = mono_ns();
        ms.push_back(static_cast<double>(t1 - t0) / 1e6);
        next = std::max(next + 20'000'000, t1);
      }
      figures_.select1_ms = std::move(ms);
    } catch (const std::exception& e) {
      select1_error_ = e.what();
    }
  });
}

server_figures server_watch::finish() {
  if (window_.joinable()) window_.join();
  if (prober_.joinable()) prober_.join();
  figures_.note += note_window_;
  if (!select1_error_.empty()) figures_.note += "SELECT 1: " + select1_error_ + "; ";
  // Backends report their transaction counts at exit, and when idle at most once a second — or
  // only after 10 s when the shared counters were busy. The clients' processes have ended, so
  // the backends still in their database are a pooler's server connections: ending them makes
  // them report now (the pooler opens new ones when asked). Then wait until the count has not
  // moved for 1.2 s, 12 s at most.
  try {
    pqxx::nontransaction tx(conn_->c);
    tx.exec_params(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1"
        " AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
        figures_.database);
  } catch (const std::exception& e) {
    figures_.note += std::string("ending the pooled backends: ") + e.what() + "; ";
  }
  auto last = read_counters();
  std::int64_t stable_since = mono_ns();
  const std::int64_t give_up = stable_since + 12'000'000'000LL;
  while (mono_ns() - stable_since < 1'200'000'000 && mono_ns() < give_up) {
    sleep_until_ns(mono_ns() + 250'000'000);
    auto now = read_counters();
    if (now.transactions != last.transactions) stable_since = mono_ns();
    last = now;
  }
  const auto delta = [](std::optional<std::int64_t> a, std::optional<std::int64_t> b) -> std::optional<std::int64_t> {
    if (!a || !b) return std::nullopt;
    return *b - *a;
  };
  figures_.transactions = delta(at_go_.transactions, last.transactions);
  figures_.write_transactions = delta(at_go_.xids, last.xids);
  figures_.statements = delta(at_go_.statements, last.statements);
  return figures_;
}

}  // namespace sqllock::contention
