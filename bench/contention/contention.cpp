// sqllock_contention — many client processes contending on one lock name (issue 26): how many
// grants per second the name hands out, how long a hand-off takes, and what it costs the server,
// beside the database's own queue (with_advisory_xact_lock) as the floor.
//
//   sqllock_contention --uri URI --kind table|semaphore|fair|rw|xact --processes N --seconds S
//                      [--hold-ms 2] [--names one|each] [--admin-uri URI] [--label TEXT]
//
// The parent migrates the schema once, closes that handle, then forks N processes. Each opens its
// own sqllock::database (pool of 2 connections) and, from a common start instant for S seconds,
// loops: try_lock_for(1 s) (xact: try_with_advisory_xact_lock_for(1 s)), hold --hold-ms, release.
// --names one: every process on the same name; each: a name per process (no contention). The
// semaphore has 1 permit; rw takes write locks. Names are new in every run (they carry the
// parent's pid), so no lease of an earlier run is in the way.
//
// One JSON object on stdout: grants/s, the processes granted at least once, hand-off gaps (from
// a holder starting its release to the next grant of the name, over every pair of consecutive
// grants of a name in the window), overlaps (a grant before the previous holder started its
// release: must be 0), the worst return of a try_lock_for past its deadline, errors by type,
// processes that did not finish (killed 30 s after the end). With --admin-uri (PostgreSQL, a
// direct connection to the clients' database, as a superuser or a member of pg_read_all_stats and
// pg_signal_backend): transactions, write transactions and statements per grant over the whole run,
// peak client connections, an unrelated SELECT 1's latency and the server's CPU
// (server_watch.hpp). After the run it ends the backends still connected to the clients'
// database (a pooler's server connections) so that they report their counts: point it at a
// benchmark's own server. Exit status 0 when the run happened (errors are part of the result),
// 1 when it could not start, 2 for bad arguments.
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "contender.hpp"
#include "sqllock/database.hpp"
#include "sqllock/migrate.hpp"

#ifdef SQLLOCK_CONTENTION_HAVE_PQXX
#include "server_watch.hpp"
#else
namespace sqllock::contention {
// Built without libpqxx: --admin-uri is refused, so nothing of this is ever used.
struct server_figures {
  std::string database;
  std::optional<std::int64_t> transactions, write_transactions, statements;
  std::int64_t peak_connections = -1;
  std::vector<double> select1_ms;
  std::optional<double> server_cpu_cores;
  std::string note;
};
struct server_watch {
  explicit server_watch(const std::string&) {}
  void run(std::int64_t, std::int64_t) {}
  server_figures finish() { return {}; }
};
}  // namespace sqllock::contention
#endif

namespace sqllock::contention {
namespace {

struct arguments {
  std::string uri, admin_uri, label, names = "one", kind_text;
  lock_kind kind = lock_kind::table;
  int processes = 0;
  double seconds = 0;
  double hold_ms = 2;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "sqllock_contention: " << why << "\n"
            << "usage: sqllock_contention --uri URI --kind table|semaphore|fair|rw|xact --processes N --seconds S\n"
            << "                          [--hold-ms 2] [--names one|each] [--admin-uri URI] [--label TEXT]\n";
  std::exit(2);
}

arguments parse(int argc, char** argv) {
  arguments a;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (i + 1 >= argc) usage("missing value for " + key);
    const std::string value = argv[++i];
    if (key == "--uri")
      a.uri = value;
    else if (key == "--admin-uri")
      a.admin_uri = value;
    else if (key == "--label")
      a.label = value;
    else if (key == "--names")
      a.names = value;
    else if (key == "--kind")
      a.kind_text = value;
    else if (key == "--processes")
      a.processes = std::atoi(value.c_str());
    else if (key == "--seconds")
      a.seconds = std::atof(value.c_str());
    else if (key == "--hold-ms")
      a.hold_ms = std::atof(value.c_str());
    else
      usage("unknown argument " + key);
  }
  static const std::map<std::string, lock_kind> kinds = {{"table", lock_kind::table},
                                                         {"semaphore", lock_kind::semaphore},
                                                         {"fair", lock_kind::fair},
                                                         {"rw", lock_kind::rw},
                                                         {"xact", lock_kind::xact}};
  if (a.uri.empty()) usage("--uri is required");
  const auto k = kinds.find(a.kind_text);
  if (k == kinds.end()) usage("--kind must be table, semaphore, fair, rw or xact");
  a.kind = k->second;
  if (a.processes < 1 || a.processes > 100000) usage("--processes must be 1 to 100000");
  if (!(a.seconds > 0 && a.seconds <= 3600)) usage("--seconds must be above 0 and at most 3600");
  if (!(a.hold_ms >= 0 && a.hold_ms <= 60000)) usage("--hold-ms must be 0 to 60000");
  if (a.names != "one" && a.names != "each") usage("--names must be one or each");
#ifndef SQLLOCK_CONTENTION_HAVE_PQXX
  if (!a.admin_uri.empty()) usage("--admin-uri needs libpqxx, which this build lacks");
#endif
  return a;
}

// The common start and end, written by the parent before it lets the children go.
struct shared_times {
  std::atomic<std::int64_t> start_ns{0}, end_ns{0};
};

// A child: opens its handle, says it is ready, waits for the go (end of file on `go`), runs.
[[noreturn]] void child(const contender_config& config, int ready, int go, const shared_times* times,
                        const std::string& out) {
  std::int64_t end_ns = 0;
  {
    contender c(config);
    const char byte = 'r';
    while (write(ready, &byte, 1) < 0 && errno == EINTR) {
    }
    close(ready);
    char b;
    while (true) {
      const auto n = read(go, &b, 1);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    close(go);
    const std::int64_t start_ns = times->start_ns.load();
    end_ns = times->end_ns.load();
    sleep_until_ns(start_ns);
    c.run_until(end_ns);
    write_result(c.finish(), out);
  }
  _exit(0);
}

double quantile(std::vector<double> xs, double q) {
  if (xs.empty()) return NAN;
  std::sort(xs.begin(), xs.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(xs.size())));
  return xs[std::min(xs.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

std::string json_number(double x, int decimals = 3) {
  if (!std::isfinite(x)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

// Removes the password from a URI for the output (postgresql://user:secret@host → user:***@host).
std::string display(const std::string& uri) {
  const auto scheme = uri.find("://");
  const auto at = uri.find('@');
  if (scheme == std::string::npos || at == std::string::npos || at < scheme) return uri;
  const auto colon = uri.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return uri;
  return uri.substr(0, colon + 1) + "***" + uri.substr(at);
}

std::vector<double> load_average() {
  std::ifstream in("/proc/loadavg");
  std::vector<double> out(3, NAN);
  in >> out[0] >> out[1] >> out[2];
  return out;
}

int run(const arguments& a) {
  const std::string tag = "contention-" + std::to_string(getpid()) + "-";
  const auto load = load_average();
  try {
    const database db(a.uri);
    if (a.kind == lock_kind::xact && db.dialect() != dialect_kind::postgresql) usage("--kind xact needs PostgreSQL");
    migrate(db);
  } catch (const std::exception& e) {
    std::cerr << "sqllock_contention: cannot migrate through " << display(a.uri) << ": " << e.what() << "\n";
    return 1;
  }

  char dir_template[] = "/tmp/sqllock-contention.XXXXXX";
  if (!mkdtemp(dir_template)) {
    std::perror("sqllock_contention: mkdtemp");
    return 1;
  }
  const std::string dir = dir_template;
  void* page = mmap(nullptr, sizeof(shared_times), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    std::perror("sqllock_contention: mmap");
    return 1;
  }
  auto* times = new (page) shared_times();
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) {
    std::perror("sqllock_contention: pipe");
    return 1;
  }

  // ---- the contenders
  const std::int64_t forked_at = mono_ns();
  std::fflush(nullptr);
  std::set<pid_t> alive;
  int fork_failures = 0;
  for (int i = 0; i < a.processes; ++i) {
    contender_config config;
    config.uri = a.uri;
    config.kind = a.kind;
    config.name = tag + (a.names == "one" ? std::string("hot") : std::to_string(i));
    config.hold = std::chrono::milliseconds(std::llround(a.hold_ms));
    const std::string out = dir + "/" + std::to_string(i);
    const pid_t pid = fork();
    if (pid == 0) {
      close(ready[0]);
      close(go[1]);
      child(config, ready[1], go[0], times, out);
    }
    if (pid < 0) {
      fork_failures = a.processes - i;
      break;
    }
    alive.insert(pid);
  }
  close(ready[1]);
  close(go[0]);
  const std::size_t forked = alive.size();

  // Every child has opened its handle (or failed to), or the wait ran out.
  std::size_t readies = 0;
  const std::int64_t ready_by = mono_ns() + 60'000'000'000LL + static_cast<std::int64_t>(forked) * 20'000'000;
  while (readies < forked) {
    const std::int64_t left_ms = (ready_by - mono_ns()) / 1'000'000;
    if (left_ms <= 0) break;
    pollfd p{ready[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left_ms, 1000))) <= 0) continue;
    char buf[4096];
    const auto n = read(ready[0], buf, sizeof buf);
    if (n == 0) break;  // every child has ended or closed its end
    if (n > 0) readies += static_cast<std::size_t>(n);
  }
  close(ready[0]);
  const double ramp_s = static_cast<double>(mono_ns() - forked_at) / 1e9;

  std::optional<server_watch> watch;
  std::string watch_error;
  if (!a.admin_uri.empty()) {
    try {
      watch.emplace(a.admin_uri);
    } catch (const std::exception& e) {
      watch_error = e.what();
    }
  }
  const std::int64_t start_ns = mono_ns() + 200'000'000;
  const std::int64_t end_ns = start_ns + static_cast<std::int64_t>(a.seconds * 1e9);
  times->start_ns.store(start_ns);
  times->end_ns.store(end_ns);
  if (watch) watch->run(start_ns, end_ns);
  close(go[1]);  // the go: every child reads end of file

  // ---- wait; a child still running 30 s after the end (past its last 1 s attempt) is killed
  int hung = 0;
  const std::int64_t kill_at = end_ns + 31'000'000'000LL;
  while (!alive.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      alive.erase(pid);
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (mono_ns() >= kill_at) {
      for (const pid_t p : alive) kill(p, SIGKILL);
      hung = static_cast<int>(alive.size());
      for (const pid_t p : alive) waitpid(p, &status, 0);
      alive.clear();
      break;
    }
    sleep_until_ns(mono_ns() + 20'000'000);
  }
  const double wall_s = static_cast<double>(mono_ns() - forked_at) / 1e9;
  server_figures server;
  if (watch) server = watch->finish();
  rusage children{};
  getrusage(RUSAGE_CHILDREN, &children);
  const double clients_cpu_s = static_cast<double>(children.ru_utime.tv_sec + children.ru_stime.tv_sec) +
                               static_cast<double>(children.ru_utime.tv_usec + children.ru_stime.tv_usec) / 1e6;

  // ---- the results
  std::map<std::string, std::vector<grant>> by_name;
  std::map<std::string, std::int64_t> errors;
  std::string first_error;
  std::int64_t grants = 0, all_grants = 0, attempts = 0, timeouts = 0, worst_overrun_ns = 0;
  int granted_processes = 0, missing = 0, not_opened = 0;
  for (std::size_t i = 0; i < forked; ++i) {
    const std::string path = dir + "/" + std::to_string(i);
    const auto r = read_result(path);
    std::remove(path.c_str());
    if (!r) {
      ++missing;
      continue;
    }
    if (!r->opened) ++not_opened;
    std::int64_t mine = 0;
    all_grants += static_cast<std::int64_t>(r->grants.size());
    auto& events = by_name[a.names == "one" ? std::string("hot") : std::to_string(i)];
    for (const auto& g : r->grants) {
      if (g.granted_ns < start_ns || g.granted_ns >= end_ns) continue;
      events.push_back(g);
      ++mine;
    }
    grants += mine;
    if (mine > 0) ++granted_processes;
    attempts += r->attempts;
    timeouts += r->timeouts;
    worst_overrun_ns = std::max(worst_overrun_ns, r->worst_overrun_ns);
    for (const auto& [type, count] : r->errors) errors[type] += count;
    if (first_error.empty()) first_error = r->first_error;
  }
  rmdir(dir.c_str());
  std::vector<double> gaps_ms;
  std::int64_t overlaps = 0;
  for (auto& [name, events] : by_name) {
    std::sort(events.begin(), events.end(), [](const grant& x, const grant& y) { return x.granted_ns < y.granted_ns; });
    for (std::size_t k = 1; k < events.size(); ++k) {
      const auto& prev = events[k - 1];
      const auto& next = events[k];
      if (next.granted_ns < prev.release_ns) {
        ++overlaps;
        continue;
      }
      gaps_ms.push_back(static_cast<double>(next.granted_ns - prev.release_ns) / 1e6);
    }
  }
  std::int64_t error_total = 0;
  for (const auto& [type, count] : errors) error_total += count;

  std::ostringstream j;
  j << "{\"label\":" << json_string(a.label) << ",\"kind\":" << json_string(a.kind_text)
    << ",\"names\":" << json_string(a.names) << ",\"processes\":" << a.processes
    << ",\"seconds\":" << json_number(a.seconds) << ",\"hold_ms\":" << json_number(a.hold_ms)
    << ",\"uri\":" << json_string(display(a.uri)) << ",\"load_avg\":[" << json_number(load[0], 2) << ","
    << json_number(load[1], 2) << "," << json_number(load[2], 2) << "]"
    << ",\"forked\":" << forked << ",\"fork_failures\":" << fork_failures << ",\"ready\":" << readies
    << ",\"ramp_s\":" << json_number(ramp_s) << ",\"grants\":" << grants
    << ",\"grants_per_s\":" << json_number(static_cast<double>(grants) / a.seconds, 2)
    << ",\"processes_granted\":" << granted_processes << ",\"attempts\":" << attempts << ",\"timeouts\":" << timeouts
    << ",\"handoffs\":" << gaps_ms.size() << ",\"handoff_p50_ms\":" << json_number(quantile(gaps_ms, 0.5))
    << ",\"handoff_p99_ms\":" << json_number(quantile(gaps_ms, 0.99))
    << ",\"handoff_max_ms\":" << json_number(quantile(gaps_ms, 1.0)) << ",\"overlaps\":" << overlaps
    << ",\"worst_overrun_ms\":" << json_number(static_cast<double>(worst_overrun_ns) / 1e6, 1)
    << ",\"errors\":" << error_total << ",\"errors_by_type\":{";
  bool first = true;
  for (const auto& [type, count] : errors) {
    j << (first ? "" : ",") << json_string(type) << ":" << count;
    first = false;
  }
  j << "},\"first_error\":" << json_string(first_error) << ",\"not_opened\":" << not_opened << ",\"hung\":" << hung
    << ",\"no_report\":" << missing << ",\"clients_cpu_s\":" << json_number(clients_cpu_s, 2)
    << ",\"wall_s\":" << json_number(wall_s, 2);
  if (!a.admin_uri.empty()) {
    // The counters span the whole run (the go to the last process's end), so they are divided by
    // every grant of the run, the ones after the window included (all_grants).
    const auto count = [](std::optional<std::int64_t> x) { return x ? std::to_string(*x) : std::string("null"); };
    const auto per_grant = [&](std::optional<std::int64_t> x) {
      return json_number(x && all_grants > 0 ? static_cast<double>(*x) / static_cast<double>(all_grants) : NAN, 2);
    };
    j << ",\"all_grants\":" << all_grants << ",\"server\":{\"database\":" << json_string(server.database)
      << ",\"transactions\":" << count(server.transactions)
      << ",\"transactions_per_grant\":" << per_grant(server.transactions)
      << ",\"write_transactions\":" << count(server.write_transactions)
      << ",\"write_transactions_per_grant\":" << per_grant(server.write_transactions)
      << ",\"statements\":" << count(server.statements) << ",\"statements_per_grant\":" << per_grant(server.statements)
      << ",\"peak_connections\":" << (server.peak_connections >= 0 ? std::to_string(server.peak_connections) : "null")
      << ",\"select1_samples\":" << server.select1_ms.size()
      << ",\"select1_p50_ms\":" << json_number(quantile(server.select1_ms, 0.5))
      << ",\"select1_p99_ms\":" << json_number(quantile(server.select1_ms, 0.99))
      << ",\"select1_max_ms\":" << json_number(quantile(server.select1_ms, 1.0))
      << ",\"cpu_cores\":" << json_number(server.server_cpu_cores.value_or(NAN), 2)
      << ",\"note\":" << json_string(watch_error.empty() ? server.note : "not connected: " + watch_error) << "}";
  }
  j << "}";
  std::cout << j.str() << std::endl;
  return 0;
}

}  // namespace
}  // namespace sqllock::contention

int main(int argc, char** argv) {
  // A write to a pipe whose reader is gone must fail, not end the program.
  signal(SIGPIPE, SIG_IGN);
  try {
    return sqllock::contention::run(sqllock::contention::parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "sqllock_contention: " << e.what() << "\n";
    return 1;
  }
}
