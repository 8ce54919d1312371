// sqllock_fault: the Jepsen-style fault harness (docs/reliability.md).
//
//   sqllock_fault --database postgresql|mariadb|sqlite --kind table|advisory|named|row|semaphore|latch|multi|fair|rw[,…]
//                 [--setup standalone|pgaf|galera] [--seconds N] [--long]
//                 [--control none|unsafe-release|client-clock|count-then-insert|rogue-count-down|sequential-multi|
//                            unordered-queue|reader-ignores-writer|leaked-place|told-on-return|
//                            unguarded-write]
//                 [--permits N] [--latch-count N] [--names-per-set K]
//                 [--expect-violation NAME]… [--expect-refusal] [--processes N] [--threads M]
//                 [--resources K] [--lease-ms L] [--keepalive-ms K] [--fault-every-ms F]
//                 [--restarts R] [--faults crash,pause-short,pause-long,pause-xlong,session-kill,
//                                   net-partition,net-stall,net-latency,net-retransmit]
//                 [--via direct|pgbouncer] [--uri-params K=V&…] [--dir DIR] [--keep]
//   sqllock_fault worker …   (started by the controller)
//
// --seconds defaults to $SQLLOCK_FAULT_SECONDS, else 60 (600 with --long); --fault-every-ms to
// $SQLLOCK_FAULT_EVERY_MS, else 3000 (2000 with --long). A fault starts every F ms while the run has
// 3 leases + 2 s left to heal, so a short run needs a short F: 20 s at 1000 ms injects every
// client fault (crash, session kill, the three pauses) and a server restart, as 30 s at 3000 ms
// does. On a standalone PostgreSQL or MariaDB server the network faults (net-…) run beside the
// others, one at a time on a worker's lock connections (fault/nemesis.hpp); --faults without any
// of them turns them off. --long also raises the load and the fault rate. --setup pgaf (PostgreSQL) and galera (MariaDB) start an HA
// cluster instead of one server (fault/servers.hpp); --restarts R then counts its server faults
// (kill-primary, kill-node): 1 by default, one a minute with --long. --uri-params adds query
// parameters to the URIs the locks use (e.g. galera=pinned). --expect-refusal: the lock kind
// must be refused (not_supported) by every worker's first lock call, for each kind of the
// --kind list in turn (one fleet each); nothing else is run. --via pgbouncer (standalone
// PostgreSQL; kinds table, semaphore, latch, multi, fair, rw: fault/config.hpp's poolable) sends
// the workers' lock connections through PgBouncer in transaction mode with ?prepare=off; the
// session kills then end the pooler's server sessions (fault/nemesis.hpp).
// Exit status: 0 when every checker found 0 violations — or, with --expect-violation (negative
// controls), when each named checker found at least one; 1 otherwise; 2 usage error; 3 the run
// could not be set up; 77 skipped (no private server can be started, or SQLLOCK_TEST_*_URI
// names a server the harness must not restart).
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fault/controller.hpp"
#include "fault/worker.hpp"
#include "support/test_env.hpp"

namespace {

using namespace sqllock::fault;

constexpr int kSkip = 77;

struct options {
  std::map<std::string, std::string> values;
  std::vector<std::string> expected;
  bool long_mode = false, keep = false, expect_refusal = false;
};

options parse(int argc, char** argv, int first) {
  options o;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--long") {
      o.long_mode = true;
    } else if (a == "--keep") {
      o.keep = true;
    } else if (a == "--expect-refusal") {
      o.expect_refusal = true;
    } else if (a.rfind("--", 0) == 0 && i + 1 < argc) {
      if (a == "--expect-violation")
        o.expected.push_back(argv[++i]);
      else
        o.values[a.substr(2)] = argv[++i];
    } else {
      throw std::invalid_argument("unexpected argument '" + a + "'");
    }
  }
  return o;
}

long long number(const options& o, const std::string& key, long long fallback) {
  const auto it = o.values.find(key);
  return it == o.values.end() ? fallback : std::stoll(it->second);
}

// The number in the environment variable `name`, or `fallback` when it is unset or empty.
long long env_number(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::stoll(v) : fallback;
}

std::string text(const options& o, const std::string& key, const std::string& fallback) {
  const auto it = o.values.find(key);
  return it == o.values.end() ? fallback : it->second;
}

// The items of a comma-separated list.
std::vector<std::string> split_list(std::string list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const auto comma = list.find(',');
    out.push_back(list.substr(0, comma));
    list = comma == std::string::npos ? "" : list.substr(comma + 1);
  }
  return out;
}

run_config config_of(const options& o) {
  run_config c;
  c.long_mode = o.long_mode;
  c.dialect = parse_dialect(text(o, "database", "postgresql"));
  for (const auto& k : split_list(text(o, "kind", "table"))) c.kinds.push_back(parse_lock_kind(k));
  if (c.kinds.empty()) throw std::invalid_argument("--kind needs a lock kind");
  if (c.kinds.size() > 1 && !o.expect_refusal)
    throw std::invalid_argument("a list of lock kinds needs --expect-refusal");
  c.kind = c.kinds.front();
  c.ctl = parse_control(text(o, "control", "none"));
  c.setup = parse_setup(text(o, "setup", "standalone"));
  c.lock_uri_params = text(o, "uri-params", "");
  c.expect_refusal = o.expect_refusal;
  const std::string via = text(o, "via", "direct");
  if (via != "direct" && via != "pgbouncer")
    throw std::invalid_argument("unknown --via '" + via + "' (direct, pgbouncer)");
  c.via_pgbouncer = via == "pgbouncer";
  c.duration = std::chrono::seconds(number(o, "seconds", o.long_mode ? 600 : env_number("SQLLOCK_FAULT_SECONDS", 60)));
  c.processes = static_cast<int>(number(o, "processes", o.long_mode ? 4 : 3));
  c.threads = static_cast<int>(number(o, "threads", o.long_mode ? 6 : 4));
  // Multi-lock sets of K names need more names than K to leave room for disjoint sets.
  c.resources = static_cast<int>(number(o, "resources", c.kind == lock_kind::multi ? 6 : o.long_mode ? 4 : 3));
  c.names_per_set = static_cast<int>(number(o, "names-per-set", 3));
  c.permits = static_cast<int>(number(o, "permits", 2));
  c.latch_count = static_cast<int>(number(o, "latch-count", 8));
  c.lease = std::chrono::milliseconds(number(o, "lease-ms", 2000));
  c.keepalive = std::chrono::milliseconds(number(o, "keepalive-ms", 500));
  c.fault_every = std::chrono::milliseconds(
      number(o, "fault-every-ms", o.long_mode ? 2000 : env_number("SQLLOCK_FAULT_EVERY_MS", 3000)));
  const bool ha = c.setup != setup_kind::standalone;
  const long long restarts_long = std::max<long long>(2, c.duration.count() / (ha ? 60 : 30));
  c.restarts = static_cast<int>(number(o, "restarts", o.long_mode ? restarts_long : ha ? 1 : 2));
  c.faults = split_list(text(o, "faults", ""));
  for (const auto& f : c.faults)
    if (f != "crash" && f != "pause-short" && f != "pause-long" && f != "pause-xlong" && f != "session-kill" &&
        f != "net-partition" && f != "net-stall" && f != "net-latency" && f != "net-retransmit")
      throw std::invalid_argument("unknown fault '" + f + "'");
  if (c.processes < 1 || c.processes > 64 || c.threads < 1 || c.resources < 1 || c.duration.count() < 5)
    throw std::invalid_argument("need 1-64 processes, threads >= 1, resources >= 1, seconds >= 5");
  if (c.permits < 1 || c.permits > 100) throw std::invalid_argument("need 1-100 permits");
  if (c.latch_count < 1 || c.latch_count > 1000) throw std::invalid_argument("need a latch count of 1-1000");
  if (c.kind == lock_kind::multi && (c.names_per_set < 1 || c.names_per_set > c.resources || c.names_per_set > 64))
    throw std::invalid_argument("need 1-64 names per set, at most --resources");
  if ((c.kind == lock_kind::table || c.kind == lock_kind::semaphore || c.kind == lock_kind::latch ||
       c.kind == lock_kind::multi || queued(c.kind)) &&
      c.dialect == sqllock::dialect_kind::sqlite)
    c.restarts = 0;
  if (c.ctl == control::client_clock && (c.dialect != sqllock::dialect_kind::postgresql || c.kind != lock_kind::table))
    throw std::invalid_argument("--control client-clock needs --database postgresql --kind table");
  if (c.ctl == control::unsafe_release && c.kind != lock_kind::table)
    throw std::invalid_argument("--control unsafe-release needs --kind table");
  if (c.ctl == control::count_then_insert &&
      (c.dialect != sqllock::dialect_kind::postgresql || c.kind != lock_kind::semaphore))
    throw std::invalid_argument("--control count-then-insert needs --database postgresql --kind semaphore");
  if (c.ctl == control::rogue_count_down &&
      (c.dialect != sqllock::dialect_kind::postgresql || c.kind != lock_kind::latch))
    throw std::invalid_argument("--control rogue-count-down needs --database postgresql --kind latch");
  if (c.ctl == control::sequential_multi && c.kind != lock_kind::multi)
    throw std::invalid_argument("--control sequential-multi needs --kind multi");
  if (c.ctl == control::unordered_queue &&
      (c.dialect != sqllock::dialect_kind::postgresql || c.kind != lock_kind::fair))
    throw std::invalid_argument("--control unordered-queue needs --database postgresql --kind fair");
  if (c.ctl == control::reader_ignores_writer &&
      (c.dialect != sqllock::dialect_kind::postgresql || c.kind != lock_kind::rw))
    throw std::invalid_argument("--control reader-ignores-writer needs --database postgresql --kind rw");
  if (c.ctl == control::leaked_place && (c.dialect != sqllock::dialect_kind::postgresql || c.kind != lock_kind::fair))
    throw std::invalid_argument("--control leaked-place needs --database postgresql --kind fair");
  // (A worker is not given the run's faults, only --net 1 when they include network faults.)
  const bool network = injects_network_faults(c) || number(o, "net", 0) != 0;
  if (c.ctl == control::told_on_return &&
      (c.dialect == sqllock::dialect_kind::sqlite || c.kind != lock_kind::table || !network))
    throw std::invalid_argument(
        "--control told-on-return needs --database postgresql or mariadb, --kind table and"
        " network faults");
  if (c.ctl == control::unguarded_write && !leased(c.kind))
    throw std::invalid_argument("--control unguarded-write needs a leased --kind (table, semaphore, multi, fair, rw)");
  if (c.setup != setup_kind::standalone && queued(c.kind))
    throw std::invalid_argument("--kind fair and rw run on a standalone server (no HA setup checks them yet)");
  const bool pg = c.dialect == sqllock::dialect_kind::postgresql, my = c.dialect == sqllock::dialect_kind::mysql;
  if (c.via_pgbouncer && (!pg || c.setup != setup_kind::standalone || c.expect_refusal))
    throw std::invalid_argument(
        "--via pgbouncer needs --database postgresql on a standalone server, no --expect-refusal");
  if (c.via_pgbouncer && !poolable(c.kind))
    throw std::invalid_argument("lock kind " + to_string(c.kind) +
                                " is not run through PgBouncer (--via pgbouncer takes table, semaphore, latch, multi,"
                                " fair, rw; docs/reliability.md, \"PgBouncer runs\")");
  if ((c.setup == setup_kind::pgaf && !pg) || (c.setup == setup_kind::galera && !my))
    throw std::invalid_argument("--setup pgaf needs --database postgresql, --setup galera --database mariadb");
  for (const auto k : c.kinds)
    if ((k == lock_kind::advisory && !pg) || (k == lock_kind::named && !my) || (k == lock_kind::row && !pg && !my))
      throw std::invalid_argument("lock kind " + to_string(k) + " is not available on this database");
  return c;
}

int worker_main(int argc, char** argv) {
  const auto o = parse(argc, argv, 2);
  worker_args w;
  w.cfg = config_of(o);
  w.uri = text(o, "uri", "");
  w.data_uri = text(o, "data-uri", w.uri);
  w.history = text(o, "history", "");
  w.board_path = text(o, "board", "");
  w.slot = static_cast<int>(number(o, "slot", 0));
  w.until_ns = number(o, "until-ns", 0);
  w.net = number(o, "net", 0) != 0;
  return run_worker(w);
}

int controller_main(int argc, char** argv) {
  const auto o = parse(argc, argv, 1);
  controller_args a;
  a.cfg = config_of(o);
  a.scripts = {SQLLOCK_SERVERS_SCRIPT, SQLLOCK_HA_SCRIPT};
  a.self = std::filesystem::read_symlink("/proc/self/exe").string();
  // An HA setup is always a cluster of its own; a standalone run uses test-servers.sh, which
  // would hand over a server named in the environment instead of starting one.
  if (a.cfg.dialect != sqllock::dialect_kind::sqlite && a.cfg.setup == setup_kind::standalone) {
    const char* var = a.cfg.dialect == sqllock::dialect_kind::postgresql ? "SQLLOCK_TEST_PG_URI"
                                                                         : "SQLLOCK_TEST_MYSQL_URI";
    if (const char* v = std::getenv(var); v && *v) {
      std::cout << "skipped: " << var << " names a server that fault tests must not restart\n";
      return kSkip;
    }
  }
  std::string dir = text(o, "dir", "");
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sqllock-fault.XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
  }
  a.dir = dir;
  report r;
  try {
    r = run_controller(a);
  } catch (const std::exception& e) {
    std::cerr << "fault run could not be set up: " << e.what() << " (files in " << dir << ")\n";
    if (!sqllock::test::servers_required() && a.cfg.dialect != sqllock::dialect_kind::sqlite) return kSkip;
    return 3;
  }
  std::cout << format_report(a.cfg, r);
  bool pass = true;
  if (o.expected.empty()) {
    pass = r.total_violations() == 0;
  } else {
    for (const auto& name : o.expected) {
      const auto it = r.violations.find(name);
      const bool found = it != r.violations.end() && it->second > 0;
      std::cout << "negative control: checker " << name
                << (found ? " reported violations, as it must\n" : " reported NONE\n");
      pass = pass && found;
    }
  }
  if (pass && !o.keep) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  } else {
    std::cout << "run files kept in " << dir << '\n';
  }
  return pass ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 1 && std::string(argv[1]) == "worker") return worker_main(argc, argv);
    return controller_main(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::cerr << "sqllock_fault: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "sqllock_fault: " << e.what() << '\n';
    return 3;
  }
}
