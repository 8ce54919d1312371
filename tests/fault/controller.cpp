#include "fault/controller.hpp"

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "fault/board.hpp"
#include "fault/fleet.hpp"
#include "fault/history.hpp"
#include "fault/latch_log.hpp"
#include "fault/latch_worker.hpp"
#include "fault/nemesis.hpp"
#include "fault/queue_log.hpp"
#include "fault/queue_rogue.hpp"
#include "fault/schema.hpp"
#include "fault/servers.hpp"
#include "fault/stall_monitor.hpp"
#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/reaper.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/rw_lock.hpp"
#include "sqllock/semaphore.hpp"
#include "sqllock/table_lock.hpp"
#include "support/time_scale.hpp"

namespace sqllock::fault {
namespace {

// Connects, retrying while a just-restarted server comes up.
database connect(const std::string& uri) {
  for (int attempt = 0;; ++attempt) {
    try {
      return database(uri);
    } catch (const connection_error&) {
      if (attempt >= 50) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

// Waits up to `limit` for resource i with the run's lock kind; returns the wait in ms, -1 if
// never acquired. Errors (a connection broken by the last faults) are retried.
std::int64_t time_to_acquire(const run_config& cfg, const std::string& uri, int i, std::chrono::milliseconds limit,
                             std::int64_t since) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  const auto waited = [&] { return (mono_ns() - since) / 1'000'000; };
  while (std::chrono::steady_clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            std::chrono::steady_clock::now());
    try {
      database db(uri);
      const std::string name = resource_name(i);
      bool got = false;
      switch (cfg.kind) {
        case lock_kind::table:
        case lock_kind::multi: {  // a multi_lock's names are table_lock rows: each must be free again
          table_lock_options o;
          o.ttl = cfg.lease;
          table_lock l(db, name, o);
          got = l.try_lock_for(left);
          break;
        }
        case lock_kind::advisory: {
          advisory_lock l(db, name);
          got = l.try_lock_for(left);
          break;
        }
        case lock_kind::named: {
          named_lock l(db, name);
          got = l.try_lock_for(left);
          break;
        }
        case lock_kind::row: got = try_with_row_lock_for(db, name, left, [](row_lock_tx&) {}); break;
        case lock_kind::semaphore: {
          semaphore_options o;
          o.ttl = cfg.lease;
          semaphore s(db, name, cfg.permits, o);
          got = s.try_acquire_for(left).has_value();
          break;
        }
        case lock_kind::fair: {
          fair_lock_options o;
          o.ttl = cfg.lease;
          fair_lock l(db, name, o);
          got = l.try_lock_for(left);
          break;
        }
        case lock_kind::rw: {  // the write lock: every place ahead must have gone
          rw_lock_options o;
          o.ttl = cfg.lease;
          rw_lock l(db, name, o);
          got = l.try_lock_for(left);
          break;
        }
        case lock_kind::latch:  // not a lock: whether it can still be armed, counted down and opened
          got = latch_opens(db, name, cfg.latch_count);
          break;
      }
      if (got) return waited();
    } catch (const error&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return -1;
}

// The fault log, the server's grant log and the clock offset (database times onto the histories'
// clock) next to the histories, for post-mortems (--keep).
void dump_evidence(const std::filesystem::path& dir, const run_evidence& ev) {
  std::ofstream faults(dir / "faults.txt");
  for (const auto& f : ev.faults)
    faults << f.kind << ' ' << f.pid << ' ' << f.start << ' ' << f.end << ' ' << f.session << ' ' << f.found_at << '\n';
  std::ofstream stalls(dir / "stalls.txt");
  for (const auto& f : ev.stalls) stalls << f.kind << ' ' << f.start << ' ' << f.end << '\n';
  std::ofstream(dir / "clock.txt") << "realtime_minus_mono_ns " << ev.realtime_minus_mono_ns << '\n';
  // Semaphore runs: resource is "<name>/<slot>" (the permits table's log).
  std::ofstream grants(dir / "grants.txt");
  for (const auto& g : ev.grants)
    grants << g.resource << ' ' << g.fence << ' ' << g.owner << ' ' << g.granted_us << ' ' << g.expires_us << ' '
           << g.taken_over_us.value_or(0) << ' ' << g.deleted_us.value_or(0) << ' ' << g.logged_us << '\n';
  if (queued(ev.cfg.kind)) {  // resource kind ticket owner pid writer lease_ms enqueued expires reader ended end logged
    std::ofstream log(dir / "queue_log.txt");
    for (const auto& q : ev.queue_log)
      log << q.resource << ' ' << q.kind << ' ' << q.ticket << ' ' << q.owner << ' ' << q.pid << ' ' << q.writer << ' '
          << q.lease_ms << ' ' << q.enqueued_us << ' ' << q.expires_us << ' ' << q.reader_us.value_or(0) << ' '
          << q.ended_us.value_or(0) << ' ' << q.end_event << ' ' << q.logged_us << '\n';
  }
  if (ev.cfg.kind == lock_kind::latch) {  // id event resource generation participant old new initial logged_us
    std::ofstream log(dir / "latch_log.txt");
    for (const auto& l : ev.latch_log)
      log << l.id << ' ' << l.event << ' ' << l.resource << ' ' << l.generation << ' '
          << (l.participant.empty() ? "-" : l.participant) << ' ' << l.old_count << ' ' << l.new_count << ' '
          << l.initial << ' ' << l.logged_us << '\n';
  }
}

// CLOCK_REALTIME − CLOCK_MONOTONIC in nanoseconds, now.
std::int64_t realtime_minus_mono_ns() {
  timespec rt{}, mono{};
  ::clock_gettime(CLOCK_REALTIME, &rt);
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  return (rt.tv_sec - mono.tv_sec) * 1'000'000'000LL + (rt.tv_nsec - mono.tv_nsec);
}

std::string flag_value(const run_config& cfg) {
  std::ostringstream s;
  std::string kinds;
  // Appended, not `"," + to_string(k)`: a false -Wrestrict from g++ 12 at -O3 (GCC bug 105329).
  for (const auto k : cfg.kinds) {
    if (!kinds.empty()) kinds += ',';
    kinds += to_string(k);
  }
  s << "database=" << sqllock::to_string(cfg.dialect) << " kind=" << kinds << " control=" << to_string(cfg.ctl)
    << " seconds=" << cfg.duration.count() << " processes=" << cfg.processes << " threads=" << cfg.threads
    << " resources=" << cfg.resources;
  if (cfg.kind == lock_kind::semaphore) s << " permits=" << cfg.permits;
  if (cfg.kind == lock_kind::latch) s << " latch_count=" << cfg.latch_count;
  if (cfg.kind == lock_kind::multi) s << " names_per_set=" << cfg.names_per_set;
  s << " lease_ms=" << cfg.lease.count() << " keepalive_ms=" << cfg.keepalive.count()
    << " fault_every_ms=" << cfg.fault_every.count() << " restarts=" << cfg.restarts;
  if (cfg.setup != setup_kind::standalone) s << " setup=" << to_string(cfg.setup);
  if (cfg.via_pgbouncer) s << " via=pgbouncer";
  if (!cfg.lock_uri_params.empty()) s << " uri_params=" << cfg.lock_uri_params;
  if (cfg.expect_refusal) s << " expect_refusal";
  return s.str();
}

// `uri` with the query parameters `params` (k=v&…) added.
std::string with_params(const std::string& uri, const std::string& params) {
  if (params.empty()) return uri;
  return uri + (uri.find('?') == std::string::npos ? '?' : '&') + params;
}

// Every worker's history, merged.
std::vector<event> read_histories(const std::vector<worker_proc>& workers) {
  std::vector<event> out;
  for (const auto& w : workers) {
    auto events = read_history(w.history, w.pid);
    out.insert(out.end(), events.begin(), events.end());
  }
  return out;
}

// The command line of worker `slot` of a fleet of cfg's lock kind, running until killed.
fleet::argv_fn worker_command(const controller_args& a, const run_config& cfg, const server_setup* servers,
                              const std::string& uri, std::int64_t until) {
  return [&a, cfg, servers, uri, until](int slot, const std::filesystem::path& history) {
    return std::vector<std::string>{a.self,
                                    "worker",
                                    "--uri",
                                    with_params(servers ? servers->worker_uri(slot) : uri, cfg.lock_uri_params),
                                    "--data-uri",
                                    with_params(servers ? servers->data_uri(slot) : uri, cfg.lock_uri_params),
                                    "--database",
                                    std::string(to_string(cfg.dialect)),
                                    "--kind",
                                    to_string(cfg.kind),
                                    "--control",
                                    to_string(cfg.ctl),
                                    "--threads",
                                    std::to_string(cfg.threads),
                                    "--resources",
                                    std::to_string(cfg.resources),
                                    "--permits",
                                    std::to_string(cfg.permits),
                                    "--latch-count",
                                    std::to_string(cfg.latch_count),
                                    "--names-per-set",
                                    std::to_string(cfg.names_per_set),
                                    "--lease-ms",
                                    std::to_string(cfg.lease.count()),
                                    "--keepalive-ms",
                                    std::to_string(cfg.keepalive.count()),
                                    "--history",
                                    history.string(),
                                    "--board",
                                    (a.dir / "board").string(),
                                    "--slot",
                                    std::to_string(slot),
                                    "--net",
                                    injects_network_faults(cfg) ? "1" : "0",
                                    "--until-ns",
                                    std::to_string(until + 3'600'000'000'000)};  // they run until killed
  };
}

// A refusal run: for each lock kind in turn, a fleet whose every thread's first grant or refusal
// is awaited (for up to the run's duration); the verdicts of all kinds in one report.
report refusal_run(const controller_args& a, const server_setup* servers, const std::string& uri) {
  report all;
  for (const auto kind : a.cfg.kinds) {
    run_evidence ev;
    ev.cfg = a.cfg;
    ev.cfg.kind = kind;
    const std::int64_t until = mono_ns() + a.cfg.duration.count() * 1'000'000'000;
    fleet workers(a.cfg.processes, a.dir, worker_command(a, ev.cfg, servers, uri, until));
    workers.start();
    for (;;) {
      workers.supervise();
      ev.workers = workers.all();
      ev.events = read_histories(ev.workers);
      const auto r = check_refusal(ev);
      if (r.metrics.at("refusal-" + to_string(kind) + "-threads-undecided") == 0 || mono_ns() > until) {
        for (const auto& [k, v] : r.metrics) all.metrics[k] += v;
        for (const auto& [k, v] : r.violations) all.violations[k] += v;
        all.examples.insert(all.examples.end(), r.examples.begin(), r.examples.end());
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  return all;
}

}  // namespace

report run_controller(const controller_args& a) {
  const auto& cfg = a.cfg;
  std::filesystem::create_directories(a.dir);
  const std::unique_ptr<server_setup> servers = start_servers(cfg, a.scripts, a.dir);
  const std::string uri = servers ? servers->uri() : "sqlite://" + (a.dir / "fault.db").string();
  const std::string lock_uri = with_params(uri, cfg.lock_uri_params);  // the liveness probes'
  {
    const database admin = connect(uri);
    create_schema(admin, cfg.resources, cfg.kind == lock_kind::semaphore ? cfg.permits : 0);
    if (cfg.kind == lock_kind::latch) create_latch_log(admin);
    if (queued(cfg.kind)) create_queue_log(admin);
    if (cfg.ctl == control::unordered_queue) create_barge_table(admin);
  }
  board holders(a.dir / "board", true);
  if (cfg.expect_refusal) return refusal_run(a, servers.get(), uri);
  std::optional<stall_monitor> starved(std::in_place, servers ? uri : std::string());
  const std::int64_t clock_offset_before = realtime_minus_mono_ns();
  const std::int64_t until = mono_ns() + cfg.duration.count() * 1'000'000'000;
  fleet workers(cfg.processes, a.dir, worker_command(a, cfg, servers.get(), uri, until));
  workers.start();

  // The reaper runs every L/2 through the whole run, as an operator's daemon would.
  std::jthread reaper;
  if (leased(cfg.kind)) {
    reaper = std::jthread([&](std::stop_token stop) {
      std::optional<database> db;
      while (!stop.stop_requested()) {
        try {
          if (!db) db.emplace(uri);
          reap_options o;
          o.stop = stop;
          reap(*db, o);
        } catch (const error&) {
        }
        std::mutex m;
        std::unique_lock lock(m);
        std::condition_variable_any().wait_for(lock, stop, reaper_period(cfg), [] { return false; });
      }
    });
  }

  nemesis nem(cfg, workers, holders, servers.get());
  std::jthread nemesis_thread([&] { nem.run(until); });
  while (mono_ns() < until) {
    workers.supervise();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  nemesis_thread.join();

  // The last fault: every worker dies at once, most of them holding locks. The wait is counted
  // from when all are dead and reaped: an ASan process's exit unmaps its huge shadow memory
  // before the kernel closes its sockets, which is no part of the lock's contract. The second of
  // slack (connecting the probes, the server ending the sessions) stretches in sanitizer builds.
  workers.kill_all();
  const std::int64_t all_dead = mono_ns();
  const auto slack = test::scaled(std::chrono::seconds(1));
  // A queue's places need no reaper: the waiters' checks delete the expired ones ahead of them.
  const auto bound = queued(cfg.kind)   ? cfg.lease + slack
                     : leased(cfg.kind) ? cfg.lease + reaper_period(cfg) + slack
                                        : cfg.keepalive + slack;
  run_evidence ev;
  ev.cfg = cfg;
  ev.liveness_bound_ms = bound.count();
  ev.lost_signal_bound_ms = (cfg.keepalive + slack).count();
  ev.failover_signal_bound_ms = leased(cfg.kind) ? (cfg.lease + slack).count() : ev.lost_signal_bound_ms;
  ev.failover_slack_ms = (cfg.lease + slack).count();
  // A hand-off in a queue (release, wake-up, the next waiter's check) is several statements and
  // wake-ups; at the full tier's start (six fault runs and a consumer build on two cores) one took
  // 1,216 ms with no single stall of 100 ms to excuse it. What the check is for stalls a lease or
  // longer (a place nobody gives back: the leaked-place control, 2–6 s), so 1.5 s sits between.
  ev.queue_stall_slack_ms = test::scaled(std::chrono::milliseconds(1500)).count();
  ev.resume_slack_ms = slack.count() / 2;
  // The smaller sample maps database times later onto the histories' clock: lenient if the clock
  // was slewed meanwhile (checker.cpp's foreign-delete test).
  ev.realtime_minus_mono_ns = std::min(clock_offset_before, realtime_minus_mono_ns());
  ev.liveness.resize(static_cast<std::size_t>(cfg.resources));
  {
    std::vector<std::jthread> probes;
    for (int i = 0; i < cfg.resources; ++i) {
      probes.emplace_back([&, i] {
        ev.liveness[static_cast<std::size_t>(i)] = {
            resource_name(i), time_to_acquire(cfg, lock_uri, i, bound + std::chrono::seconds(5), all_dead)};
      });
    }
  }
  reaper = {};
  ev.liveness_from = all_dead;
  ev.stalls = starved->stalls();
  starved.reset();

  ev.workers = workers.all();
  ev.events = read_histories(ev.workers);
  ev.faults = nem.log();
  {
    const database admin = connect(uri);
    if (cfg.kind == lock_kind::table || cfg.kind == lock_kind::multi) ev.grants = read_grants(admin);
    if (cfg.kind == lock_kind::semaphore) ev.grants = read_permit_grants(admin);
    if (cfg.kind == lock_kind::latch) ev.latch_log = read_latch_log(admin);
    if (queued(cfg.kind)) ev.queue_log = read_queue_log(admin);
    ev.data = read_data(admin);
  }
  dump_evidence(a.dir, ev);
  auto r = check(ev);
  for (const auto& [kind, n] : nem.counts()) r.metrics["faults-" + kind] = n;
  if (cfg.setup != setup_kind::standalone)  // how long the cluster's faults lasted
    for (const auto& f : ev.faults)
      if (f.pid == 0)
        r.metrics["faults-" + f.kind + "-max-ms"] = std::max(r.metrics["faults-" + f.kind + "-max-ms"],
                                                             (f.end - f.start) / 1'000'000);
  r.metrics["faults-final-kill-all"] = 1;
  return r;
}

std::string format_report(const run_config& cfg, const report& r) {
  std::ostringstream s;
  s << "fault run: " << flag_value(cfg) << '\n';
  for (const auto& [k, v] : r.metrics) s << "  metric " << k << " = " << v << '\n';
  for (const auto& [k, v] : r.violations) s << "  violations " << k << " = " << v << '\n';
  for (const auto& e : r.examples) s << "  example " << e << '\n';
  s << "total violations: " << r.total_violations() << '\n';
  return s.str();
}

}  // namespace sqllock::fault
