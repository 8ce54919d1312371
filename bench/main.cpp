// sqllock_bench: every case of bench/*.cpp registers itself; see docs/benchmarks.md.
#include <benchmark/benchmark.h>

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // No case matching --benchmark_filter is an error, so a renamed case fails the smoke test.
  if (benchmark::RunSpecifiedBenchmarks() == 0) return 1;
  benchmark::Shutdown();
  return 0;
}
