#!/usr/bin/env bash
# The test command (README). Needs root on Debian 12 for install-deps.sh the first time.
#
#   scripts/test.sh          the quick tier: what a contributor waits for (about 15 minutes on a
#                            fresh two-core machine, install and build included)
#   scripts/test.sh --full   the full suite: what CI runs (.ci/run)
#
# The trees, their flags and which tests each runs are the presets of CMakePresets.json; this
# script chains them and sums up. The quick tier:
#   1. scripts/install-deps.sh (compiler, ccache, Ninja, clang-format, client libraries, GoogleTest,
#      PostgreSQL, MariaDB, PgBouncer, the HA servers, clang)
#   2. configure and build preset `ci` (Release, -Werror, in build/ci), then ctest preset `quick`:
#      every test except those labelled `ha` (the pg_auto_failover and Galera clusters), with fault
#      runs of 20 s and a fault a second, against private servers the ctest fixture starts and
#      removes; a test needing a missing server fails (not skips). format.check fails on
#      unformatted code.
# --full runs ctest preset `full` in step 2 instead (every test: the HA clusters too, fault runs of
# 20 s with a fault every 1.5 s), and beside it, at the lowest CPU priority, builds presets
# `relwithdebinfo` (for /usr, -Werror, no tests) and `minsizerel` (-Werror, no tests); then:
#   3. preset `asan` (AddressSanitizer + UndefinedBehaviorSanitizer, Clang, Debug, -Werror,
#      build/asan) is built while the Debian packages are made from the RelWithDebInfo tree and
#      installed into a clean Debian root (scripts/check-packages.sh; SQLLOCK_TEST_PACKAGES=0 leaves
#      that out)
#   4. ctest preset `asan`: the tests whose labels do not say they check nothing more under the
#      sanitizers (see the preset's exclude list and README), fault runs as in the quick tier
#      (SQLLOCK_TEST_ASAN=0 leaves steps 3 and 4 out), and beside it scripts/fuzz.sh: each
#      libFuzzer target of fuzz/ for 20 s (SQLLOCK_TEST_FUZZ=0 leaves the fuzzers out)
#   With Release (ci), RelWithDebInfo, MinSizeRel (GCC) and Debug (asan, Clang) every build type is
#   built warning-clean (SQLLOCK_TEST_BUILD_TYPES=0 leaves out the two builds without tests).
# -Werror is never a default for users (SQLLOCK_WERROR=OFF); the presets this script uses turn it
# on. Every tree compiles through ccache, so a second run recompiles only what changed.
# CTEST_PARALLEL_LEVEL=N overrides how many tests run at once (the presets: 6, and 4 in the
# sanitizer suite, whose processes are slower and use more CPU).
# Exits non-zero when any step fails; the last line sums up all tests run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

full=0
case "${1:-}" in
  "") ;;
  --full) full=1 ;;
  -h | --help) sed -n '2,/^set -euo/{/^set -euo/!p}' "$0"; exit 0 ;;
  *) echo "test.sh: unknown argument '$1' (--full, or none for the quick tier)" >&2; exit 2 ;;
esac
export SQLLOCK_TEST_REQUIRE_SERVERS=1

# Server templates (initialised data directories the private servers start from; see
# test-servers.sh) live for this run only, so nothing is left behind.
export SQLLOCK_TEST_TEMPLATE_ROOT
SQLLOCK_TEST_TEMPLATE_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/sqllock-templates.XXXXXX")
trap 'rm -rf "$SQLLOCK_TEST_TEMPLATE_ROOT"' EXIT

failures=()
passed=0 failed=0 skipped=0
times=()
step() { printf '\n==== %s\n' "$*"; }

# Adds the counts of a ctest log to the totals; false when the log has no summary line.
count() {
  local summary total bad skip
  summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -n 1)
  [[ -n "$summary" ]] || return 1
  total=${summary##* out of }
  bad=$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"$summary")
  skip=$(grep -cE '^[[:space:]]+[0-9]+ - .*\(Skipped\)$' "$1" || true)
  passed=$((passed + total - bad - skip))
  failed=$((failed + bad))
  skipped=$((skipped + skip))
}

# record_failed_tests NAME DIR: notes each test ctest found failing in DIR, with the first lines of
# its output that say why (gtest failures, errors, checker violations), for the summary. CI shows
# only the end of the output, so the summary must name what failed.
failed_details=()
record_failed_tests() {
  local name=$1 dir=$2 test line
  local list=$dir/Testing/Temporary/LastTestsFailed.log log=$dir/Testing/Temporary/LastTest.log
  [[ -f "$list" ]] || return 0
  while IFS= read -r test; do
    test=${test#*:}
    failed_details+=("failed test ($name): $test")
    while IFS= read -r line; do
      failed_details+=("    $line")
    done < <(awk -v t="$test" '
      $0 ~ /^[0-9]+\/[0-9]+ Testing: / { inside = (substr($0, index($0, ": ") + 2) == t); next }
      !inside { next }
      /^<end of output>$/ { if (n == 0) for (i = k - 3; i < k; ++i) if (i >= 0) print last[i % 3]; inside = 0; next }
      { last[k++ % 3] = substr($0, 1, 200) }
      /^ *metric / || /^ *violations .* = 0$/ { next }
      /^Command: / { print substr($0, 1, 200); next }
      /Failure|FAILED|[Ee]rror|violation|example |Timeout|Expected|Which is|Value of|Actual|failed|could not|servers\.log: / {
        if (++n <= 8) print substr($0, 1, 200)
      }' "$log")
  done < <(head -n 12 "$list")
}

# build CONFIGURE_PRESET: configure and build one tree of CMakePresets.json (build/PRESET); false
# (and noted) when either fails.
build() {
  local name=$1
  step "$name: configure (cmake --preset $name)"
  if ! cmake --preset "$name"; then
    failures+=("$name: configure"); failed=$((failed + 1)); return 1
  fi
  step "$name: build (cmake --build --preset $name)"
  if ! cmake --build --preset "$name"; then
    failures+=("$name: build"); failed=$((failed + 1)); return 1
  fi
}

# run_tests CONFIGURE_PRESET TEST_PRESET: ctest with the test preset in build/CONFIGURE_PRESET.
run_tests() {
  local name=$1 tests=$2 dir=build/$1 rc=0
  step "$name: ctest --preset $tests"
  # Most tests wait on servers, timers or child processes, not the CPU: the presets run several at
  # a time. Tests that restart a server are marked RUN_SERIAL and run alone.
  local -a jobs=()
  [[ -z "${CTEST_PARALLEL_LEVEL:-}" ]] || jobs=(--parallel "$CTEST_PARALLEL_LEVEL")
  ctest --preset "$tests" "${jobs[@]}" 2>&1 | tee "$dir/ctest.log" || rc=$?
  if ! count "$dir/ctest.log"; then
    failures+=("$name: ctest printed no summary"); failed=$((failed + 1))
  elif ((rc != 0)); then
    failures+=("$name: ctest")
    record_failed_tests "$name" "$dir"
  fi
  return 0
}

# timed LABEL CMD...: runs CMD and notes how long it took under LABEL; CMD's status.
timed() {
  local label=$1 t0=$SECONDS rc=0
  shift
  "$@" || rc=$?
  times+=("$label: $((SECONDS - t0)) s")
  return "$rc"
}

# The checks of --full that need no timing bound run beside the CPU-heavy builds: the Debian
# packages (debootstrap and apt: mostly waiting on the disk and the archive) beside the sanitizer
# build, the fuzzers (one core) beside the MinSizeRel build. Their output goes to a log, printed
# when they are waited for.
# background LABEL LOG CMD...: starts CMD with its output in LOG.
# wait_background LABEL: waits for it, prints its log and counts it as one test passed or failed;
# nothing when no job LABEL was started (or it was waited for already).
declare -A bg_pid=() bg_log=() bg_start=()
background() {
  local label=$1 log=$2
  shift 2
  step "$label: started in the background (output: $log)"
  "$@" >"$log" 2>&1 &
  bg_pid[$label]=$!
  bg_log[$label]=$log
  bg_start[$label]=$SECONDS
}
wait_background() {
  local label=$1 rc=0
  [[ -n "${bg_pid[$label]:-}" ]] || return 0
  wait "${bg_pid[$label]}" || rc=$?
  unset "bg_pid[$label]"
  step "$label (ran in the background)"
  cat "${bg_log[$label]}"
  times+=("$label (in the background): $((SECONDS - bg_start[$label])) s")
  if ((rc == 0)); then
    passed=$((passed + 1))
  else
    failures+=("$label"); failed=$((failed + 1))
  fi
  return "$rc"
}

timed "install dependencies" ./scripts/install-deps.sh

# The build types no test runs in (RelWithDebInfo, then MinSizeRel), for --full: configured and
# built at the lowest CPU priority in the background while `ctest --preset full` runs, which
# leaves a third of the two cores idle waiting on servers and timers (and yields them at once).
build_types() {
  local name
  for name in relwithdebinfo minsizerel; do
    echo "== $name: cmake --preset $name && cmake --build --preset $name"
    nice -n 19 cmake --preset "$name" || return 1
    nice -n 19 cmake --build --preset "$name" || return 1
  done
}

if timed "ci: configure and build" build ci; then
  if ((full)); then
    [[ "${SQLLOCK_TEST_BUILD_TYPES:-1}" == 0 ]] || background "build types" build/build-types.log build_types
    timed "ci: ctest --preset full" run_tests ci full
  else
    timed "ci: ctest --preset quick" run_tests ci quick
  fi
fi

if ((full)); then
  # With Release (ci), RelWithDebInfo and MinSizeRel (GCC) and Debug (the sanitizer tree, Clang)
  # every build type is built warning-clean with -Werror; GCC's Debug adds no warning of its own
  # (its warnings at -O0 are the front end's, which every GCC tree reports).
  types_built=0
  if [[ "${SQLLOCK_TEST_BUILD_TYPES:-1}" != 0 ]]; then
    [[ -n "${bg_pid[build types]:-}" ]] || background "build types" build/build-types.log build_types
    wait_background "build types" && types_built=1
  fi
  # The packages are made from the RelWithDebInfo tree (it installs into /usr); their check
  # (debootstrap and apt: mostly waiting on the disk and the archive) runs beside the sanitizer
  # build.
  if ((types_built)) && [[ "${SQLLOCK_TEST_PACKAGES:-1}" != 0 ]]; then
    background packages build/relwithdebinfo/check-packages.log \
      ./scripts/check-packages.sh build/relwithdebinfo build/relwithdebinfo/package-check
  fi
  if [[ "${SQLLOCK_TEST_ASAN:-1}" != 0 ]]; then
    # The sanitizer options (leak checking on, a program stops at the first error of either
    # sanitizer, scripts/lsan.supp for leaks inside Debian's client libraries) are in the preset.
    timed "asan: configure and build" build asan && asan_built=1 || asan_built=0
    wait_background packages || true
    # The libFuzzer targets of fuzz/ (scripts/fuzz.sh: 3 targets × SQLLOCK_FUZZ_SECONDS, default
    # 20 s, one at a time), at the lowest CPU priority beside the sanitizer suite.
    if [[ "${SQLLOCK_TEST_FUZZ:-1}" != 0 ]]; then
      background fuzz build/fuzz.log nice -n 19 ./scripts/fuzz.sh
    fi
    ((asan_built)) && timed "asan: ctest --preset asan" run_tests asan asan
  elif [[ "${SQLLOCK_TEST_FUZZ:-1}" != 0 ]]; then
    background fuzz build/fuzz.log ./scripts/fuzz.sh
  fi
  wait_background packages || true
  wait_background fuzz || true
fi

step "summary"
times+=("total: $SECONDS s")
printf '%s\n' "${times[@]}"
if ((${#failures[@]})); then
  ((${#failed_details[@]} == 0)) || printf '%s\n' "${failed_details[@]}"
  printf 'FAILED: %s\n' "${failures[@]}"
fi
echo "total: $passed passed, $failed failed, $skipped skipped"
((${#failures[@]} == 0))
