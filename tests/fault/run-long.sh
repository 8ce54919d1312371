#!/usr/bin/env bash
# Long mode of the fault harness: every database × lock kind in turn with --long (more workers,
# a fault every 2 s, a server restart every 30 s), then the negative controls. Prints each run's
# report; exits non-zero when any run fails.
#
#   tests/fault/run-long.sh [BUILD_DIR] [SECONDS_PER_RUN]     (defaults: build, 600)
#
# Needs a build with tests (sqllock_fault) and the servers of scripts/install-deps.sh; starts
# and stops its own private servers.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build}
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
echo "run-long.sh: $failed failed run(s)"
((failed == 0))
