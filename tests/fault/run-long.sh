#!/usr/bin/env bash
# Long mode of the fault harness: every database × lock kind in turn with --long (more workers,
# a fault every 2 s, a server restart every 30 s), the high-availability setups (a kill of the
# pg_auto_failover primary or of a Galera node every 60 s), then the negative controls and the
# Galera refusals. Prints each run's report; exits non-zero when any run fails.
#
#   tests/fault/run-long.sh [BUILD_DIR] [SECONDS_PER_RUN]     (defaults: build/ci, 600)
#
# Needs a build with tests (sqllock_fault) and the servers of scripts/install-deps.sh (for the
# HA runs: pg_auto_failover and Galera); starts and stops its own private servers.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build/ci}
seconds=${2:-600}
bin=$build/tests/sqllock_fault
[[ -x "$bin" ]] || { echo "run-long.sh: $bin not built (cmake --build $build --target sqllock_fault)" >&2; exit 2; }

runs=(
  "--database postgresql --kind table"
  "--database mariadb --kind table"
  "--database sqlite --kind table"
  "--database postgresql --kind advisory"
  "--database mariadb --kind named"
  "--database postgresql --kind row"
  "--database mariadb --kind row"
  "--database postgresql --kind semaphore"
  "--database mariadb --kind semaphore"
  "--database sqlite --kind semaphore"
  "--database postgresql --kind multi"
  "--database mariadb --kind multi"
  "--database sqlite --kind multi"
  "--database postgresql --kind latch --latch-count 8"
  "--database mariadb --kind latch --latch-count 8"
  "--database sqlite --kind latch --latch-count 8"
  "--database postgresql --kind fair"
  "--database mariadb --kind fair"
  "--database sqlite --kind fair"
  "--database postgresql --kind rw"
  "--database mariadb --kind rw"
  "--database sqlite --kind rw"
  "--database postgresql --kind table --setup pgaf --resources 6"
  "--database postgresql --kind advisory --setup pgaf --resources 6"
  "--database mariadb --kind table --setup galera"
)
failed=0
for r in "${runs[@]}"; do
  echo "==== sqllock_fault $r --long --seconds $seconds"
  # shellcheck disable=SC2086
  "$bin" $r --long --seconds "$seconds" || failed=$((failed + 1))
done
echo "==== negative controls"
"$bin" --database postgresql --kind table --seconds 30 --control unsafe-release \
  --faults pause-long,pause-xlong --restarts 0 --expect-violation foreign-delete || failed=$((failed + 1))
"$bin" --database postgresql --kind table --seconds 30 --control client-clock --restarts 0 \
  --expect-violation server-overlap || failed=$((failed + 1))
"$bin" --database mariadb --kind named --setup galera --seconds 30 --restarts 0 --uri-params galera=pinned \
  --expect-violation client-overlap || failed=$((failed + 1))
"$bin" --database postgresql --kind semaphore --permits 2 --seconds 30 --control count-then-insert --restarts 0 \
  --expect-violation server-overcommit || failed=$((failed + 1))
"$bin" --database postgresql --kind latch --latch-count 8 --seconds 30 --control rogue-count-down --restarts 0 \
  --expect-violation double-count --expect-violation early-open || failed=$((failed + 1))
"$bin" --database postgresql --kind multi --names-per-set 3 --resources 6 --seconds 30 --control sequential-multi \
  --restarts 0 --expect-violation partial-grant || failed=$((failed + 1))
"$bin" --database postgresql --kind fair --seconds 30 --control unordered-queue --restarts 0 --faults crash,pause-short \
  --expect-violation ticket-order || failed=$((failed + 1))
"$bin" --database postgresql --kind rw --seconds 30 --control reader-ignores-writer --restarts 0 \
  --expect-violation write-overlap || failed=$((failed + 1))
echo "==== refusals"
"$bin" --database mariadb --kind named,row --setup galera --seconds 30 --expect-refusal || failed=$((failed + 1))
echo "run-long.sh: $failed failed run(s)"
((failed == 0))
