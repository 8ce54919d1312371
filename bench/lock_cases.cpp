// sqllock's own lock cycles: acquire + release at 1 and 8 threads, re-entrant re-acquire, and
// the hand-off of one contended key among 8 waiters. Named sqllock.<kind>.<db>.<case>.
// Issue 14's primitives through the same loops: sqllock.semaphore.<db>.cycle_t<n> (a semaphore
// of 4 permits per thread), sqllock.semaphore.<db>.handoff_8 (one semaphore of 1 permit, 8
// waiters; pg_unnamed: ?prepare=off, so waiters poll instead of LISTEN), and
// sqllock.multi10.<db>.cycle_t<n> against sqllock.table10.<db>.cycle_t<n> (10 names per thread,
// one multi_lock or 10 table_locks one after another).
// Issue 15's kinds: fair and rw (write levels) are in lock_kinds(), so they have every case above;
// sqllock.fair.pg_unnamed.handoff_8 polls where sqllock.fair.pg.handoff_8 wakes on NOTIFY; and
// sqllock.rw_shared.<db>.cycle_t<n> (read levels, each thread its own name) against
// sqllock.rw_shared.<db>.one_name_cycle_t8 (8 readers of one name at once).
#include <atomic>
#include <iostream>
#include <chrono>
#include <mutex>
#include <thread>

#include "sqllock/error.hpp"
#include "support/databases.hpp"
#include "support/harness.hpp"
#include "support/lockers.hpp"

namespace sqllock::bench {
namespace {

using steady = std::chrono::steady_clock;

// Each thread locks its own key: the cost of the lock itself, not of waiting. `query` is added to
// the URI ("prepare=off": unnamed statements, as behind a transaction-mode pooler). With
// `one_name`, every thread locks the same key (for kinds that share it: readers).
void cycles(benchmark::State& state, const lock_kind& kind, dialect_kind d, int threads, const std::string& query = "",
            bool one_name = false) {
  const database db = open_target(d, "distributed_lock", 8, query);
  std::vector<std::unique_ptr<locker>> lockers;
  for (int t = 0; t < threads; ++t)
    lockers.push_back(kind.make(db, one_name ? std::string("bench-readers") : "bench-cycle-" + std::to_string(t), ""));
  run_and_report(state, threads, [&](int t) { lockers[static_cast<std::size_t>(t)]->run_locked([] {}); });
}

// The lock is already held once by the same owner; a cycle adds and removes a second level.
void reentrant(benchmark::State& state, const lock_kind& kind, dialect_kind d) {
  const database db = open_target(d);
  const auto lk = kind.make(db, "bench-reentrant", "bench-owner");
  lk->hold();
  run_and_report(state, 1, [&](int) { lk->run_locked([] {}); });
  lk->give_back();
}

// Eight threads, one key. Each takes the lock, stamps the time just before releasing, releases,
// then works 1 ms outside the lock before queueing again. A hand-off is an acquisition by a
// thread other than the last holder; its latency runs from the holder's decision to release to
// the moment the next holder's lock() returns (so it includes the release statement itself).
void handoff(benchmark::State& state, const lock_kind& kind, dialect_kind d, const std::string& query = "") {
  constexpr int kThreads = 8;
  const database db = open_target(d, "distributed_lock", kThreads + 2, query);
  std::vector<std::unique_ptr<locker>> lockers;
  for (int t = 0; t < kThreads; ++t) lockers.push_back(kind.make(db, "bench-handoff", ""));

  std::mutex mu;  // guards the fields below
  int last_holder = -1;
  steady::time_point released_at{};
  std::vector<double> handoff_us;
  std::int64_t acquisitions = 0;

  const auto end = steady::now() + std::chrono::duration_cast<steady::duration>(
                                       std::chrono::duration<double>(std::max(2.0, phase_seconds())));
  std::atomic<bool> failed{false};
  std::atomic<std::int64_t> refused{0};
  const auto retries_before = release_retries();
  std::string error;
  const auto start = steady::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      try {
        while (steady::now() < end && !failed) {
          try {
            lockers[static_cast<std::size_t>(t)]->run_locked([&] {
              const auto now = steady::now();
              std::lock_guard lock(mu);
              ++acquisitions;
              if (last_holder >= 0 && last_holder != t)
                handoff_us.push_back(std::chrono::duration<double, std::micro>(now - released_at).count());
              last_holder = t;
              released_at = steady::now();
            });
          } catch (const backend_error&) {
            ++refused;  // e.g. an InnoDB deadlock between acquirers: nothing is held, try again
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      } catch (const std::exception& e) {
        // Said at once: the other threads may wait a whole lease for a lock this one left behind.
        std::cerr << "handoff thread " << t << " failed: " << e.what() << std::endl;
        std::lock_guard lock(mu);
        if (error.empty()) error = e.what();
        failed = true;
      }
    });
  }
  for (auto& th : pool) th.join();
  if (failed) throw std::runtime_error(error);
  cycle_stats s;
  s.seconds = seconds_since(start);
  s.micros = std::move(handoff_us);
  state.SetIterationTime(s.seconds);
  state.counters["handoffs_per_s"] = s.per_second();
  state.counters["acquisitions_per_s"] = static_cast<double>(acquisitions) / s.seconds;
  state.counters["p50_us"] = s.quantile(0.50);
  state.counters["p99_us"] = s.quantile(0.99);
  state.counters["acquire_errors"] = static_cast<double>(refused.load());
  state.counters["release_retries"] = static_cast<double>(release_retries() - retries_before);
}

[[maybe_unused]] const bool registered = [] {
  for (const auto& kind : lock_kinds()) {
    for (const auto d : kind.dialects) {
      const std::string prefix = "sqllock." + kind.name + "." + short_name(d) + ".";
      for (const int threads : {1, 8})
        add_case(prefix + "cycle_t" + std::to_string(threads),
                 [&kind, d, threads](benchmark::State& s) { cycles(s, kind, d, threads); });
      if (kind.reentrant) add_case(prefix + "reentrant", [&kind, d](benchmark::State& s) { reentrant(s, kind, d); });
      add_case(prefix + "handoff_8", [&kind, d](benchmark::State& s) { handoff(s, kind, d); });
      // PostgreSQL with ?prepare=off, the setting for PgBouncer in transaction mode: every
      // statement unnamed (Parse/Bind/Execute each time) against the prepared default.
      if (d == dialect_kind::postgresql && (kind.name == "table" || kind.name == "advisory")) {
        for (const int threads : {1, 8})
          add_case("sqllock." + kind.name + ".pg_unnamed.cycle_t" + std::to_string(threads),
                   [&kind, d, threads](benchmark::State& s) { cycles(s, kind, d, threads, "prepare=off"); });
      }
      if (d == dialect_kind::postgresql && kind.name == "fair")  // waiters poll: no LISTEN
        add_case("sqllock.fair.pg_unnamed.handoff_8",
                 [&kind, d](benchmark::State& s) { handoff(s, kind, d, "prepare=off"); });
    }
  }
  using d = dialect_kind;
  for (const auto db : {d::postgresql, d::mysql, d::sqlite}) {
    const std::string name = short_name(db);
    for (const int threads : {1, 8}) {
      const std::string t = ".cycle_t" + std::to_string(threads);
      add_case("sqllock.semaphore." + name + t,
               [db, threads](benchmark::State& s) { cycles(s, semaphore_kind(4), db, threads); });
      add_case("sqllock.multi10." + name + t,
               [db, threads](benchmark::State& s) { cycles(s, multi_kind(10), db, threads); });
      add_case("sqllock.table10." + name + t,
               [db, threads](benchmark::State& s) { cycles(s, table_seq_kind(10), db, threads); });
    }
    for (const int threads : {1, 8})
      add_case("sqllock.rw_shared." + name + ".cycle_t" + std::to_string(threads),
               [db, threads](benchmark::State& s) { cycles(s, rw_shared_kind(), db, threads); });
    add_case("sqllock.rw_shared." + name + ".one_name_cycle_t8",
             [db](benchmark::State& s) { cycles(s, rw_shared_kind(), db, 8, "", true); });
    add_case("sqllock.semaphore." + name + ".handoff_8",
             [db](benchmark::State& s) { handoff(s, semaphore_kind(1), db); });
  }
  add_case("sqllock.semaphore.pg_unnamed.handoff_8",
           [](benchmark::State& s) { handoff(s, semaphore_kind(1), d::postgresql, "prepare=off"); });
  return true;
}();

}  // namespace
}  // namespace sqllock::bench
