// Issue 14's primitives where they need loops of their own (the semaphore and multi-lock cycles
// and hand-offs run through lock_cases.cpp):
//   sqllock.latch.<db>.count_down_t<n>              latch::count_down() on one latch per thread
//   sqllock.latch.<db>.count_down_participant_t<n>  latch::count_down(participant), a new id each
//   sqllock.multi10.<db>.round_trips                statements the server runs for one multi_lock
//   sqllock.table10.<db>.round_trips                of 10 names, and for 10 table_locks of them
// The latches are armed with the largest count, so no phase opens them; raw_*.cpp run the same
// statements as raw.latch.<db>.*.
#include <thread>

#include "sqllock/latch.hpp"
#include "sqllock/multi_lock.hpp"
#include "sqllock/table_lock.hpp"
#include "support/databases.hpp"
#include "support/harness.hpp"
#include "support/lockers.hpp"
#include "support/raw_sql.hpp"

namespace sqllock::bench {
namespace {

using d = dialect_kind;

void latch_count_downs(benchmark::State& state, dialect_kind dialect, int threads, bool participant) {
  const database db = open_target(dialect, "distributed_lock", 8);
  const std::string prefix = std::string(participant ? "bench-latch-p-" : "bench-latch-") + std::to_string(threads) +
                             "-";
  std::vector<latch> latches;
  for (int t = 0; t < threads; ++t) {
    arm_latch(db, prefix + std::to_string(t));
    latches.emplace_back(db, prefix + std::to_string(t));
  }
  std::vector<std::int64_t> calls(static_cast<std::size_t>(threads));
  run_and_report(state, threads, [&](int t) {
    const auto i = static_cast<std::size_t>(t);
    const auto r = participant ? latches[i].count_down("p" + std::to_string(++calls[i])) : latches[i].count_down();
    if (!r.counted) throw std::runtime_error("latch count-down did not count");
  });
}

// One multi_lock of `names` names, or (sequential) that many table_locks taken one after another;
// the statements the server ran for each acquire and each release, averaged over 20 cycles after
// a warm-up (statements prepared, connections open). Leases of an hour: no renewal runs meanwhile.
void round_trips(benchmark::State& state, dialect_kind dialect, std::size_t names, bool sequential) {
  const database db = open_target(dialect, "distributed_lock", 2);
  const database counter = open_target(dialect, "distributed_lock", 1);
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < names; ++i) keys.push_back("bench-trips-" + std::to_string(i));
  std::vector<std::unique_ptr<table_lock>> tables;
  std::unique_ptr<multi_lock> multi;
  if (sequential) {
    table_lock_options o;
    o.ttl = std::chrono::hours(1);
    for (const auto& k : keys) tables.push_back(std::make_unique<table_lock>(db, k, o));
  } else {
    multi_lock_options o;
    o.ttl = std::chrono::hours(1);
    multi = std::make_unique<multi_lock>(db, keys, o);
  }
  const auto acquire = [&] {
    if (multi) return multi->lock();
    for (auto& t : tables) t->lock();
  };
  const auto release = [&] {
    if (multi) return multi->release();
    for (auto it = tables.rbegin(); it != tables.rend(); ++it) (*it)->release();
  };
  for (int i = 0; i < 5; ++i) {
    acquire();
    release();
  }
  // What reading the counter itself adds (MariaDB counts the SHOW; PostgreSQL excludes it).
  const double c0 = server_statements(counter), c1 = server_statements(counter);
  const double self = c1 - c0;
  constexpr int kRounds = 20;
  double acquired = 0, released = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    const double a = server_statements(counter);
    acquire();
    const double b = server_statements(counter);
    release();
    const double c = server_statements(counter);
    acquired += b - a - self;
    released += c - b - self;
  }
  state.SetIterationTime(seconds_since(start));
  state.counters["names"] = static_cast<double>(names);
  state.counters["acquire_statements"] = acquired / kRounds;
  state.counters["release_statements"] = released / kRounds;
}

[[maybe_unused]] const bool registered = [] {
  for (const auto db : {d::postgresql, d::mysql, d::sqlite}) {
    const std::string prefix = "sqllock.latch." + short_name(db) + ".";
    for (const int threads : {1, 8}) {
      const std::string t = "_t" + std::to_string(threads);
      add_case(prefix + "count_down" + t,
               [db, threads](benchmark::State& s) { latch_count_downs(s, db, threads, false); });
      add_case(prefix + "count_down_participant" + t,
               [db, threads](benchmark::State& s) { latch_count_downs(s, db, threads, true); });
    }
  }
  for (const auto db : {d::postgresql, d::mysql}) {  // SQLite has no server-side statement counter
    add_case("sqllock.multi10." + short_name(db) + ".round_trips",
             [db](benchmark::State& s) { round_trips(s, db, 10, false); });
    add_case("sqllock.table10." + short_name(db) + ".round_trips",
             [db](benchmark::State& s) { round_trips(s, db, 10, true); });
  }
  return true;
}();

}  // namespace
}  // namespace sqllock::bench
