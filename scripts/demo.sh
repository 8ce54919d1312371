#!/usr/bin/env bash
# The demo (README command 1). Needs root on Debian 12 for install-deps.sh the first time.
# Installs the build dependencies (no database servers: the demo uses SQLite), builds the
# `sqllock` command in build/release (preset `release` of CMakePresets.json), creates the lock
# table in a fresh SQLite database under /tmp/sqllock-demo, shows it with the sqlite3 shell, then
# runs two jobs that contend for one lock with `sqllock run` (flock(1) across hosts): the second
# waits for the first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=build/release
demo=/tmp/sqllock-demo
db=$demo/locks.db

step() { printf '\n==== %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }  # echo a command, then run it

step "install dependencies (no servers)"
./scripts/install-deps.sh --no-servers

step "configure and build the sqllock command ($build)"
cmake --preset release >/dev/null
cmake --build --preset release --target sqllock_cli
cli=$build/tools/sqllock/sqllock

step "create the lock table in $db"
rm -rf "$demo"
mkdir -p "$demo"
show "$cli" migrate --db "sqlite://$db"

step "what is in $db"
show sqlite3 "$db" .schema
for table in $(sqlite3 "$db" "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"); do
  echo "$table: $(sqlite3 "$db" "SELECT count(*) FROM \"$table\"") row(s)"
done

step "two jobs contend for the lock 'nightly-report'"
stamp() { date +%H:%M:%S.%3N; }
job() {  # job NAME SECONDS: what each `sqllock run` runs while it holds the lock
  printf '%s  job %s: got the lock, working %ss\n' "$(stamp)" "$1" "$2"
  sleep "$2"
  printf '%s  job %s: done, releasing\n' "$(stamp)" "$1"
}
export -f job stamp
printf '%s  starting job A, then job B 0.3 s later\n' "$(stamp)"
"$cli" run --db "sqlite://$db" --lock nightly-report -- bash -c 'job A 2' &
a=$!
sleep 0.3
printf '%s  job B: waiting for the lock\n' "$(stamp)"
"$cli" run --db "sqlite://$db" --lock nightly-report -- bash -c 'job B 1' &
b=$!
sleep 0.3
printf '%s  while A holds it, a third caller with -n gives up at once: ' "$(stamp)"
rc=0
"$cli" run -n --db "sqlite://$db" --lock nightly-report -- true || rc=$?
echo "exit $rc (1 = lock held elsewhere)"
wait "$a" "$b"
printf '%s  both jobs finished; B ran only after A released\n' "$(stamp)"
