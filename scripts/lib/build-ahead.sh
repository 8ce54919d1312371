#!/usr/bin/env bash
# scripts/lib/build-ahead.sh STATE: configures and builds, one after another, the trees that
# scripts/test.sh tests or builds after its default tree (sanitizers, the other build types, the
# fuzz targets; each left out as test.sh leaves it out), while test.sh runs the tests. For each it
# writes STATE/<name>.log (the output) and then STATE/<name>.done (time and exit status); its
# process id goes to STATE/pid first. Started by test.sh in a session of its own (setsid).
#
# It takes only CPU time the tests leave idle. Linux shares the CPU between sessions first (the
# scheduler's autogroups) and then between the processes of a session: so this session's share
# gets the lowest weight (nice 19), and its processes the idle policy (SCHED_IDLE) — without the
# first, a build in a session of its own would take half of a busy CPU from the servers and tests.
# Whatever fails here, test.sh's own steps build the tree again and report the error.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib/test-trees.sh
. scripts/lib/test-trees.sh

state=$1
echo $$ >"$state/pid"
echo 19 >/proc/self/autogroup 2>/dev/null || true
chrt --idle -p 0 $$ >/dev/null 2>&1 || renice -n 19 -p $$ >/dev/null 2>&1 || true

ahead() {  # NAME COMMAND...: runs it, then marks NAME done with its time and exit status
  local mark t0=$SECONDS rc
  mark=$(prebuild_mark "$state" "$1")
  shift
  "$@" >"$mark.log" 2>&1
  rc=$?
  echo "$((SECONDS - t0)) s, exit $rc" >"$mark.done"
}

if [[ "${SQLLOCK_TEST_ASAN:-1}" != 0 ]]; then
  (sanitizer_env && ahead "$asan_build" cmake_build "$asan_build" "${suite_args[@]}" "${asan_args[@]}")
fi
if [[ "${SQLLOCK_TEST_BUILD_TYPES:-1}" != 0 ]]; then
  for type in "${build_types[@]}"; do
    type_args "$type"
    ahead "$(type_dir "$type")" cmake_build "$(type_dir "$type")" "${targs[@]}"
  done
fi
if [[ "${SQLLOCK_TEST_FUZZ:-1}" != 0 ]]; then ahead fuzz ./scripts/fuzz.sh --build-only; fi
echo done >"$state/end"
