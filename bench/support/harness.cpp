#include "support/harness.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

namespace sqllock::bench {
namespace {

using steady = std::chrono::steady_clock;

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::stod(v);
}

}  // namespace

double phase_seconds() { return env_double("SQLLOCK_BENCH_SECONDS", 3.0); }

std::int64_t max_rows() { return static_cast<std::int64_t>(env_double("SQLLOCK_BENCH_MAX_ROWS", 1e6)); }

double seconds_since(steady::time_point start) { return std::chrono::duration<double>(steady::now() - start).count(); }

double cycle_stats::quantile(double q) const {
  if (micros.empty()) return 0;
  std::vector<double> sorted = micros;
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  const auto k = std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
  return sorted[k];
}

// This process's user + system CPU seconds so far (all threads).
static double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

cycle_stats run_cycles(int threads, double seconds, const std::function<void(int)>& cycle,
                       const std::function<bool()>& stop_early) {
  // Warm-up: a tenth of the phase, at most half a second, so every thread has its connection
  // and prepared statements before timing starts.
  const double warmup = std::min(0.5, seconds / 10);
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  std::vector<std::vector<double>> samples(static_cast<std::size_t>(threads));
  steady::time_point measured_start, measured_end;

  std::atomic<int> warmed{0};
  std::atomic<bool> stopped{false};
  std::atomic<bool> go{false};
  const auto run = [&](int t) {
    try {
      const auto warm_end = steady::now() + std::chrono::duration<double>(warmup);
      do cycle(t);
      while (steady::now() < warm_end && !failed);
      ++warmed;
      while (!go && !failed) std::this_thread::yield();
      auto& mine = samples[static_cast<std::size_t>(t)];
      mine.reserve(100000);
      while (!failed) {
        const auto t0 = steady::now();
        if (t0 >= measured_end || stopped) break;
        cycle(t);
        mine.push_back(std::chrono::duration<double, std::micro>(steady::now() - t0).count());
      }
    } catch (...) {
      std::lock_guard lock(mu);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(run, t);
  while (warmed < threads && !failed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  measured_start = steady::now();
  measured_end = measured_start + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(seconds));
  const double cpu_start = process_cpu_seconds();
  go = true;
  if (stop_early) {
    while (!stop_early() && steady::now() < measured_end && !failed)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stopped = true;
  }
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);

  cycle_stats out;
  // Until the last cycle that started in time has finished.
  out.seconds = seconds_since(measured_start);
  out.cpu_seconds = process_cpu_seconds() - cpu_start;
  for (auto& v : samples) out.micros.insert(out.micros.end(), v.begin(), v.end());
  return out;
}

void report(benchmark::State& state, const cycle_stats& s) {
  state.SetIterationTime(s.seconds);
  state.counters["cycles_per_s"] = s.per_second();
  state.counters["p50_us"] = s.quantile(0.50);
  state.counters["p99_us"] = s.quantile(0.99);
  if (!s.micros.empty()) state.counters["client_cpu_us"] = s.cpu_seconds * 1e6 / static_cast<double>(s.micros.size());
}

void run_and_report(benchmark::State& state, int threads, const std::function<void(int)>& cycle) {
  report(state, run_cycles(threads, phase_seconds(), cycle));
}

void add_case(const std::string& name, std::function<void(benchmark::State&)> body) {
  benchmark::RegisterBenchmark(name.c_str(),
                               [body = std::move(body)](benchmark::State& state) {
                                 for (auto _ : state) {
                                   try {
                                     body(state);
                                   } catch (const std::exception& e) {
                                     state.SkipWithError(e.what());
                                     state.SetIterationTime(0.001);
                                   }
                                 }
                               })
      ->Iterations(1)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace sqllock::bench
