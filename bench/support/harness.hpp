// The measuring loop shared by every benchmark case.
//
// Each case is one Google Benchmark run of exactly one iteration with manual time: inside it,
// run_cycles() drives its own threads for a fixed wall-clock duration and times every cycle. One
// pool of samples across all threads gives true p50/p99 (Google Benchmark's per-thread counters
// could only average per-thread percentiles), and a fixed duration keeps the whole run bounded.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sqllock::bench {

// Seconds each measured phase lasts: SQLLOCK_BENCH_SECONDS (default 3; the smoke test uses 0.05).
double phase_seconds();
// Largest lock-table size the size, reaper and renewal cases use: SQLLOCK_BENCH_MAX_ROWS
// (default 1,000,000; scripts/bench.sh --quick lowers it). Larger cases are skipped.
std::int64_t max_rows();

// Latency samples in microseconds and what they cover.
struct cycle_stats {
  double seconds = 0;          // wall time of the measured phase
  std::vector<double> micros;  // one per completed cycle, all threads together
  double cpu_seconds = 0;      // user + system CPU of this whole process meanwhile
  double per_second() const { return seconds > 0 ? static_cast<double>(micros.size()) / seconds : 0; }
  // The q-quantile (0..1) of the samples, nearest-rank; 0 when there are none.
  double quantile(double q) const;
};

// Calls cycle(thread_index) over and over on `threads` threads: first for a short warm-up
// (connections opened, statements prepared) that is not recorded, then for `seconds` or until
// `stop_early()` turns true, timing each call. An exception from a cycle stops every thread and
// is rethrown here.
cycle_stats run_cycles(int threads, double seconds, const std::function<void(int)>& cycle,
                       const std::function<bool()>& stop_early = {});

// Reports `s` as this iteration's time and as counters cycles_per_s, p50_us, p99_us and
// client_cpu_us (this process's CPU time per cycle: what the client side costs).
void report(benchmark::State& state, const cycle_stats& s);

// Runs `cycle` on `threads` threads for phase_seconds() and reports it: the same as
// report(state, run_cycles(threads, phase_seconds(), cycle)).
void run_and_report(benchmark::State& state, int threads, const std::function<void(int)>& cycle);

// Registers a one-iteration, manual-time case; `body` runs inside the iteration loop's single
// pass and reports through `state`. An exception from `body` becomes SkipWithError.
void add_case(const std::string& name, std::function<void(benchmark::State&)> body);

// Wall-clock seconds since `start`.
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace sqllock::bench
