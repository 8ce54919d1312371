// How sqllock behaves as the lock table and the number of held locks grow: acquire latency with
// 1k / 100k / 1M rows present, the reaper deleting 1M expired rows under load, renewal traffic
// with 1 / 100 / 10,000 held locks, and memory per held lock. Named sqllock.<kind>.<db>.<case>.
#include <unistd.h>

#include <fstream>
#include <map>
#include <thread>

#include "sqllock/reaper.hpp"
#include "sqllock/table_lock.hpp"
#include "support/databases.hpp"
#include "support/harness.hpp"
#include "support/lock_rows.hpp"
#include "support/lockers.hpp"

namespace sqllock::bench {
namespace {

using steady = std::chrono::steady_clock;

void analyze(const database& db) {
  const char q = db.dialect() == dialect_kind::mysql ? '`' : '"';
  const std::string table = q + db.table() + q;
  run_sql(db, db.dialect() == dialect_kind::mysql ? "ANALYZE TABLE " + table : "ANALYZE " + table);
}

// Acquire + release of one key with `rows` live leases of other keys in the table. Sizes run in
// increasing order and share one table, so each case only adds the missing rows.
void table_size(benchmark::State& state, dialect_kind d, std::int64_t rows) {
  const database db = open_target(d, "bench_size");
  const auto present = lock_rows(db);
  if (present < rows) {
    test::row_spec spec;
    spec.prefix = "fill-" + std::to_string(rows) + "-";
    spec.count = rows - present;
    spec.expires_in = std::chrono::hours(24);
    test::insert_rows(db, spec);
    analyze(db);
  }
  table_lock lk(db, "bench-size-key");
  std::vector<double> acquire_us;
  const auto s = run_cycles(1, phase_seconds(), [&](int) {
    const auto t0 = steady::now();
    lk.lock();
    acquire_us.push_back(std::chrono::duration<double, std::micro>(steady::now() - t0).count());
    lk.release();
  });
  report(state, s);
  cycle_stats acquires;
  acquires.micros = std::move(acquire_us);
  state.counters["acquire_p50_us"] = acquires.quantile(0.5);
  state.counters["acquire_p99_us"] = acquires.quantile(0.99);
  state.counters["rows"] = static_cast<double>(lock_rows(db));
}

// `rows` expired leases; two acquirer threads cycle on their own keys, first alone, then while
// reap() (default batch) deletes the expired rows on another handle.
void reaper(benchmark::State& state, dialect_kind d, std::int64_t rows) {
  const database db = open_target(d, "bench_reap");
  test::row_spec spec;
  spec.prefix = "dead-";
  spec.count = rows;
  spec.expires_in = std::chrono::milliseconds(-60000);
  test::insert_rows(db, spec);
  analyze(db);
  std::vector<std::unique_ptr<table_lock>> locks;
  for (int t = 0; t < 2; ++t) locks.push_back(std::make_unique<table_lock>(db, "bench-reap-" + std::to_string(t)));
  const auto cycle = [&](int t) {
    auto& lk = *locks[static_cast<std::size_t>(t)];
    lk.lock();
    lk.release();
  };
  const auto before = run_cycles(2, phase_seconds(), cycle);

  const database reaper_db = open_target(d, "bench_reap", 2);
  std::atomic<bool> done{false};
  std::uint64_t deleted = 0;
  double reap_seconds = 0;
  std::exception_ptr error;
  std::thread reaper_thread([&] {
    try {
      const auto t0 = steady::now();
      deleted = reap(reaper_db);
      reap_seconds = seconds_since(t0);
    } catch (...) {
      error = std::current_exception();
    }
    done = true;
  });
  const auto during = run_cycles(2, 600, cycle, [&] { return done.load(); });
  reaper_thread.join();
  if (error) std::rethrow_exception(error);

  state.SetIterationTime(reap_seconds);
  state.counters["reaped_rows"] = static_cast<double>(deleted);
  state.counters["reap_rows_per_s"] = static_cast<double>(deleted) / reap_seconds;
  state.counters["p99_before_us"] = before.quantile(0.99);
  state.counters["p99_during_us"] = during.quantile(0.99);
  state.counters["p50_before_us"] = before.quantile(0.5);
  state.counters["p50_during_us"] = during.quantile(0.5);
  state.counters["cycles_per_s_before"] = before.per_second();
  state.counters["cycles_per_s_during"] = during.per_second();
}

// Statements the server has executed so far: on PostgreSQL the calls pg_stat_statements counts in
// this database, by statement; on MariaDB the server's Com_stmt_execute (sqllock prepares every
// statement) under the key "all". The counting query itself is excluded.
std::map<std::string, double> statement_counts(const database& db) {
  std::map<std::string, double> out;
  if (db.dialect() == dialect_kind::postgresql) {
    const auto r = run_sql(db,
                           "SELECT query, calls FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database "
                           "WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'");
    for (const auto& row : r.rows) {
      const double calls = std::stod(row.at(1).value_or("0"));
      out[row.at(0).value_or("")] += calls;
      out["all"] += calls;
    }
  } else {
    const auto r = run_sql(db, "SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'");
    out["all"] = std::stod(r.rows.at(0).at(1).value_or("0"));
  }
  return out;
}

// `held` table locks held with a 1.5 s lease (renewed every 500 ms, by one background thread per
// handle); counts the statements the server runs over 6 renewal periods while nothing else
// happens.
void renewal(benchmark::State& state, dialect_kind d, std::int64_t held) {
  const auto period = std::chrono::milliseconds(500);
  const database db = open_target(d, "bench_renew_" + std::to_string(held), 2);
  if (d == dialect_kind::postgresql) {
    try {
      run_sql(db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      statement_counts(db);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("pg_stat_statements is not loaded (scripts/bench.sh loads it): ") +
                               e.what());
    }
  }
  table_lock_options options;
  options.ttl = period * 3;
  std::vector<std::unique_ptr<table_lock>> locks;
  for (std::int64_t i = 0; i < held; ++i) {
    locks.push_back(std::make_unique<table_lock>(db, "bench-renew-" + std::to_string(i), options));
    locks.back()->lock();
  }
  std::this_thread::sleep_for(period);  // the first renewal after the last acquire has run
  const auto before = statement_counts(db);
  const auto t0 = steady::now();
  std::this_thread::sleep_for(period * 6);
  const auto after = statement_counts(db);
  const double periods = seconds_since(t0) / std::chrono::duration<double>(period).count();
  double renew_calls = 0;
  for (const auto& [query, calls] : after)
    if (query.find("renewed_at") != std::string::npos)
      renew_calls += calls - (before.count(query) ? before.at(query) : 0);
  for (auto& lk : locks)
    if (!lk->holds()) throw std::runtime_error("a lease was lost during the renewal case");
  state.SetIterationTime(seconds_since(t0));
  state.counters["held"] = static_cast<double>(held);
  state.counters["statements_per_period"] = (after.at("all") - before.at("all")) / periods;
  if (d == dialect_kind::postgresql) state.counters["renew_statements_per_period"] = renew_calls / periods;
}

// This process's resident-set peak (VmHWM) or current size (VmRSS), in bytes.
double proc_status_bytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) * 1024;
  return 0;
}

// Peak memory growth while `held` locks of one kind are taken and held (lock objects included),
// divided by `held`. Run it in a process of its own: freed memory of earlier cases would be
// reused and hide part of the growth.
void memory(benchmark::State& state, const lock_kind& kind, dialect_kind d, std::int64_t held) {
  const database db = open_target(d, "bench_memory", 4);
  { std::ofstream("/proc/self/clear_refs") << "5"; }  // resets VmHWM to the current RSS
  const double base = proc_status_bytes("VmRSS");
  const auto t0 = steady::now();
  {
    std::vector<std::unique_ptr<locker>> locks;
    for (std::int64_t i = 0; i < held; ++i) {
      locks.push_back(kind.make(db, "bench-mem-" + std::to_string(i), "bench-memory"));
      locks.back()->hold();
    }
    state.counters["peak_bytes_per_lock"] = (proc_status_bytes("VmHWM") - base) / static_cast<double>(held);
    for (auto& lk : locks) lk->give_back();
  }
  state.SetIterationTime(seconds_since(t0));
  state.counters["held"] = static_cast<double>(held);
}

[[maybe_unused]] const bool registered = [] {
  for (const auto& target : all_targets()) {
    const std::string prefix = "sqllock.table." + target.name + ".";
    for (const std::int64_t rows : {1000, 100000, 1000000})
      add_case(prefix + "rows_" + std::to_string(rows), [d = target.dialect, rows](benchmark::State& s) {
        if (rows > max_rows()) return s.SkipWithError("larger than SQLLOCK_BENCH_MAX_ROWS");
        table_size(s, d, rows);
      });
    add_case(prefix + "reaper",
             [d = target.dialect](benchmark::State& s) { reaper(s, d, std::min<std::int64_t>(1000000, max_rows())); });
    if (target.dialect != dialect_kind::sqlite)  // no server-side statement counters
      for (const std::int64_t held : {1, 100, 10000})
        add_case(prefix + "renewal_" + std::to_string(held),
                 [d = target.dialect, held](benchmark::State& s) { renewal(s, d, held); });
  }
  for (const auto& kind : lock_kinds())
    if (kind.reentrant)
      for (const auto d : kind.dialects)
        add_case("sqllock." + kind.name + "." + short_name(d) + ".memory_10000",
                 [&kind, d](benchmark::State& s) { memory(s, kind, d, 10000); });
  return true;
}();

}  // namespace
}  // namespace sqllock::bench
