#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (AddressSanitizer + UndefinedBehaviorSanitizer)
# and runs each for a while: fuzz_uri (database URIs), fuzz_duration (command-line durations),
# fuzz_names (lock and table names, SQL templates). Exits non-zero when a target crashes or finds
# an input that breaks one of its checks; the input is kept in the build directory's crashes/.
#
#   scripts/fuzz.sh                 each target for SQLLOCK_FUZZ_SECONDS (default 20)
#   scripts/fuzz.sh uri names       only those targets
#
# SQLLOCK_FUZZ_BUILD_DIR: build directory (default build/fuzz, beside the trees of
# CMakePresets.json). The seed corpora in fuzz/corpus/<target>/ are read, never written: what a
# run discovers goes to a temporary copy.
# Needs clang-14 and libclang-rt-14-dev (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=${SQLLOCK_FUZZ_SECONDS:-20}
build=${SQLLOCK_FUZZ_BUILD_DIR:-build/fuzz}
targets=("$@")
((${#targets[@]})) || targets=(uri duration names)
compiler=$(command -v clang++-14 || command -v clang++ || true)
if [[ -z "$compiler" ]]; then
  echo "fuzz.sh: clang++ not found; run scripts/install-deps.sh" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! { cmake -S fuzz -B "$build" -DCMAKE_CXX_COMPILER="$compiler" && cmake --build "$build" -j "$(nproc)"; } \
    >"$work/build.log" 2>&1; then
  cat "$work/build.log" >&2
  echo "fuzz.sh: building the fuzz targets failed" >&2
  exit 1
fi
mkdir -p "$build/crashes"
failed=()
for t in "${targets[@]}"; do
  mkdir -p "$work/$t"
  dict=()
  [[ -f "fuzz/$t.dict" ]] && dict=("-dict=fuzz/$t.dict")
  echo "fuzz.sh: fuzz_$t for ${seconds} s"
  # New inputs go to the first (temporary) corpus directory; the seeds are only read.
  if ! "$build/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/crashes/$t-" "${dict[@]}" "$work/$t" "fuzz/corpus/$t" >"$work/$t.log" 2>&1; then
    tail -n 40 "$work/$t.log" >&2
    echo "fuzz.sh: fuzz_$t FAILED; the input is in $build/crashes/ (replay: $build/fuzz_$t FILE)" >&2
    failed+=("$t")
  else
    runs=$(grep -aoE 'stat::number_of_executed_units: *[0-9]+' "$work/$t.log" | grep -oE '[0-9]+$' || echo "?")
    echo "fuzz.sh: fuzz_$t ok ($runs inputs)"
  fi
done
if ((${#failed[@]})); then
  echo "fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: all targets ok"
