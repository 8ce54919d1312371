#!/usr/bin/env bash
# The full check (README command 2; CI runs it through .ci/run). Needs root on Debian 12 for
# install-deps.sh the first time. Steps:
#   1. scripts/install-deps.sh (compiler, client libraries, GoogleTest, PostgreSQL, MariaDB)
#   2. configure + build + ctest in build/ (SQLLOCK_BUILD_DIR): a Release (-O3) build, as packagers
#      make it, with -Werror; the ctest fixture starts private PostgreSQL and MariaDB servers, and
#      tests needing a missing server fail (not skip)
#   3. the same with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/ (a Debug build,
#      -Werror; SQLLOCK_ASAN_BUILD_DIR; SQLLOCK_TEST_ASAN=0 leaves this out for a quicker local run),
#      without the tests labelled ha (pg_auto_failover and Galera clusters), consumer and config
#      (how sqllock is built and installed) and examples, the fault harness's negative controls,
#      and the lock kinds' tests on the SOCI PostgreSQL, SOCI MySQL and SOCI-through-PgBouncer
#      targets, which all run in step 2
#   4. the library, programs and examples in RelWithDebInfo and MinSizeRel, with -Werror: with
#      Release (step 2) and Debug (step 3) every build type is warning-clean
#      (SQLLOCK_TEST_BUILD_TYPES=0 leaves it out)
#   5. scripts/fuzz.sh: each libFuzzer target of fuzz/ for 20 s (SQLLOCK_TEST_FUZZ=0 leaves it out)
# The default run includes the consumer.* tests (find_package, pkg-config and add_subdirectory
# use of sqllock), compose.config (checks docker-compose.yml) and the examples; both runs
# include the man-page checks.
# Step 4 also builds the Debian packages and installs them into a clean Debian root.
# -Werror is never a default for users (SQLLOCK_WERROR=OFF); this script turns it on.
# CTEST_PARALLEL_LEVEL=N (default 4) sets how many tests run at once. The fault runs take
# SQLLOCK_FAULT_SECONDS each (default here 30; 10 in the sanitizer suite; tests/fault/run-long.sh
# is the long mode). Exits non-zero when any step
# fails; the last line sums up all tests run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${SQLLOCK_BUILD_DIR:-build}
asan_build=${SQLLOCK_ASAN_BUILD_DIR:-build-asan}
jobs=$(nproc)
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
      /Failure|FAILED|[Ee]rror|violation|example |Timeout|Expected|Which is|Value of|Actual/ {
        if (++n <= 8) print substr($0, 1, 200)
      }' "$log")
  done < <(head -n 12 "$list")
}

# suite NAME DIR CMAKE_ARGS...: configure, build and test one build tree.
suite() {
  local name=$1 dir=$2 t0=$SECONDS rc=0
  shift 2
  step "$name: configure ($dir)"
  if ! cmake -S . -B "$dir" -DSQLLOCK_BUILD_TESTS=ON -DSQLLOCK_WERROR=ON "$@"; then
    failures+=("$name: configure"); failed=$((failed + 1)); return
  fi
  step "$name: build (-j$jobs)"
  if ! cmake --build "$dir" -j "$jobs"; then
    failures+=("$name: build"); failed=$((failed + 1)); return
  fi
  step "$name: ctest"
  # Most tests wait on servers, timers or child processes, not the CPU (a Release run at three at
  # a time kept the two cores 28% busy): run four at a time.
  # Tests that restart a server are marked RUN_SERIAL and run alone.
  # SUITE_CTEST_ARGS is a list of ctest options, split on blanks (never globbed: they hold regexes).
  local -a extra=()
  read -r -a extra <<<"${SUITE_CTEST_ARGS:-}"
  ctest --test-dir "$dir" --output-on-failure --no-tests=error --parallel "${CTEST_PARALLEL_LEVEL:-4}" \
    "${extra[@]}" 2>&1 |
    tee "$dir/ctest.log" || rc=$?
  if ! count "$dir/ctest.log"; then
    failures+=("$name: ctest printed no summary"); failed=$((failed + 1))
  elif ((rc != 0)); then
    failures+=("$name: ctest")
    record_failed_tests "$name" "$dir"
  fi
  times+=("$name: $((SECONDS - t0)) s")
}

step "install dependencies"
./scripts/install-deps.sh

# The fault runs for 30 s each here (the harness's own default is 60 s; long mode 600 s).
SQLLOCK_FAULT_SECONDS=${SQLLOCK_FAULT_SECONDS:-30} suite default "$build" -DCMAKE_BUILD_TYPE=Release

if [[ "${SQLLOCK_TEST_ASAN:-1}" != 0 ]]; then
  # Leak checking on; a program stops at the first error of either sanitizer. Debug: the sanitizers
  # check the same either way and an unoptimised build compiles faster. scripts/lsan.supp lists
  # leaks inside Debian's client libraries (with reasons), never sqllock's.
  export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:detect_stack_use_after_return=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  if [[ -f scripts/lsan.supp ]]; then
    LSAN_OPTIONS=suppressions=$(pwd -P)/scripts/lsan.supp:print_suppressions=0
    export LSAN_OPTIONS
  fi
  # The fault runs (tests/fault) are shorter here (10 s: about three faults and the restarts
  # each): the sanitizers check the code paths that faults take, and the full-length runs
  # already ran in the default build. The benchmarks are left out (their smoke test ran in the
  # default build), and so are the examples (label examples): their library code runs here in
  # the lock kinds' tests, and the example programs themselves are built here with -Werror.
  # The HA setups (label ha: the pg_auto_failover and Galera fault runs, galera_test) run in the
  # default suite only: the same client code runs here against the standalone servers and
  # PgBouncer, and each cluster start costs 20-50 s. So do the negative controls (fault.control.*):
  # they check the checkers, which are the same code in both builds, with deliberately unsafe
  # peers that are not sqllock's code; and the consumer and config tests, which check how
  # sqllock is built, installed and packaged, not its code. And the lock kinds' tests (the classes
  # named *Test and *Contract) on the targets soci_postgresql, soci_mysql and pgbouncer_soci: the
  # SOCI driver runs under the sanitizers in DriverConformance on every backend and in every kind
  # test on soci_sqlite, and the lock code above the driver in every kind test on the other
  # targets (pgbouncer_pqxx among them: the pooler's unnamed statements and refusals); those
  # three targets add a third of this suite's time and no code of sqllock's not covered here.
  SQLLOCK_FAULT_SECONDS=${SQLLOCK_ASAN_FAULT_SECONDS:-10} \
    SUITE_CTEST_ARGS="-LE ^(ha|consumer|config|examples)$ -E ^fault[.]control[.]|(Test|Contract)[.][^/]*/.*(soci_(postgresql|mysql)(_polling)?|pgbouncer_soci)$" \
    suite sanitizers "$asan_build" -DSQLLOCK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DSQLLOCK_BUILD_BENCH=OFF
  unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
fi

# ---- the other build types: build only (the tests ran in Release and, with sanitizers, Debug,
# both with -Werror; plain Debug sets no flag of its own that the sanitizer build lacks).
# The RelWithDebInfo tree installs into /usr, so the Debian packages are made from it and
# installed into a clean Debian root (scripts/check-packages.sh; SQLLOCK_TEST_PACKAGES=0 leaves
# that out).
if [[ "${SQLLOCK_TEST_BUILD_TYPES:-1}" != 0 ]]; then
  for type in RelWithDebInfo MinSizeRel; do
    step "build type $type: library, programs and examples with -Werror"
    t0=$SECONDS
    dir=build-$(tr '[:upper:]' '[:lower:]' <<<"$type")
    prefix=()
    [[ "$type" == RelWithDebInfo ]] && prefix=(-DCMAKE_INSTALL_PREFIX=/usr)
    if cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" "${prefix[@]}" -DSQLLOCK_WERROR=ON \
      -DSQLLOCK_BUILD_TESTS=OFF -DSQLLOCK_BUILD_BENCH=OFF && cmake --build "$dir" -j "$jobs"; then
      passed=$((passed + 1))
      if ((${#prefix[@]})) && [[ "${SQLLOCK_TEST_PACKAGES:-1}" != 0 ]]; then
        step "Debian packages from $dir: scripts/check-packages.sh"
        if ./scripts/check-packages.sh "$dir" "$dir/package-check"; then
          passed=$((passed + 1))
        else
          failures+=("packages"); failed=$((failed + 1))
        fi
      fi
    else
      failures+=("build type $type"); failed=$((failed + 1))
    fi
    times+=("build type $type: $((SECONDS - t0)) s")
  done
fi

# ---- fuzzing (issue 7): the libFuzzer targets of fuzz/ briefly (scripts/fuzz.sh: 3 targets ×
# SQLLOCK_FUZZ_SECONDS, default 20 s; SQLLOCK_TEST_FUZZ=0 leaves this out).
if [[ "${SQLLOCK_TEST_FUZZ:-1}" != 0 ]]; then
  step "fuzz: scripts/fuzz.sh"
  t0=$SECONDS
  if ./scripts/fuzz.sh; then
    passed=$((passed + 1))
  else
    failures+=("fuzz"); failed=$((failed + 1))
  fi
  times+=("fuzz: $((SECONDS - t0)) s")
fi

step "summary"
printf '%s\n' "${times[@]}"
if ((${#failures[@]})); then
  ((${#failed_details[@]} == 0)) || printf '%s\n' "${failed_details[@]}"
  printf 'FAILED: %s\n' "${failures[@]}"
fi
echo "total: $passed passed, $failed failed, $skipped skipped"
((${#failures[@]} == 0))
