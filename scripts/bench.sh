#!/usr/bin/env bash
# Runs every benchmark in one go and writes docs/benchmarks.md (and docs/bench-*.png).
#
#   scripts/bench.sh            the full run (about 25 minutes on 2 cores, 6 of them the scale section)
#   scripts/bench.sh --quick    a smoke run of a few minutes: 1 s phases, at most 100k rows
#   scripts/bench.sh --no-install   skip scripts/install-deps.sh --bench
#   scripts/bench.sh --only scale   only the scale section (below; about 10 minutes): rewrites that
#                               section of docs/benchmarks.md in place and leaves the rest as it is
#   scripts/bench.sh --scale-long   the scale section's long form: also 512 and 2,000 processes, 20 s
#                               each (raises `ulimit -n` to its hard limit, which must allow 4 file
#                               descriptors per process, and PostgreSQL's max_connections to
#                               3 per process; roughly an hour, and directly connected 2,000 waiters
#                               stall the server: issue 26); with --only scale or the full run
#
# In one run, on private servers it starts and removes (scripts/test-servers.sh, plus a
# redis-server on a free loopback port): sqllock's benchmarks (bench/, Release build in
# build/bench-release), the same SQL run raw in the same process, the same SQL through pgbench
# -M prepared and the mariadb client, the npm package advisory-lock, Redis SET NX PX (and a
# Redisson-style semaphore script), and a callgrind profile of one table-lock cycle; semaphore,
# multi-lock, latch, fair-lock and read-write-lock cases likewise, and the cost of a guard (a guarded
# transaction beside the same transaction unguarded). Raw results stay in the work directory it prints.
# The scale section (issue 26): sqllock_contention (bench/contention/) forks N client processes,
# each with its own handle, on one hot lock name (and on a name each), directly and through the
# PgBouncer of scripts/test-servers.sh (transaction mode, its pool raised to 20 server connections,
# `?prepare=off`): table lock, semaphore of 1 permit, fair lock, and with_advisory_xact_lock as the
# database's own floor; N = 8 and 64, 8 s each (--scale-long adds 512 and 2,000).
# SQLLOCK_BENCH_REPORT_DIR=dir writes the report there instead of docs/ (a trial run).
# Numbers from different runs (or machines) are not comparable: compare inside one report only.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
quick=0
install=1
only=
scale_long=0
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --no-install) install=0 ;;
    --only)
      [[ "${2:-}" == scale ]] || { echo "bench.sh: --only takes 'scale'" >&2; exit 2; }
      only=scale
      shift ;;
    --only=scale) only=scale ;;
    --scale-long) scale_long=1 ;;
    -h | --help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
say() { echo "bench.sh: $*" >&2; }

if ((quick)); then
  seconds=1 max_rows=100000 mysql_cycles=(800 150)
else
  seconds=2 max_rows=1000000 mysql_cycles=(3000 600)
fi

((install)) && "$root/scripts/install-deps.sh" --bench

build=${SQLLOCK_BENCH_BUILD_DIR:-$root/build/bench-release}
say "building (Release) in $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSQLLOCK_BUILD_TESTS=OFF -DSQLLOCK_BUILD_TOOLS=OFF \
  -DSQLLOCK_BUILD_BENCH=ON >/dev/null
if [[ "$only" == scale ]]; then
  cmake --build "$build" -j2 --target sqllock_contention >/dev/null
else
  cmake --build "$build" -j2 --target sqllock_bench sqllock_bench_sql sqllock_contention >/dev/null
fi
bench=$build/bench/sqllock_bench
contention=$build/bench/contention/sqllock_contention

work=$(mktemp -d /tmp/sqllock-bench.XXXXXX)
chmod 755 "$work"
redis_pid=
cleanup() {
  [[ -n "$redis_pid" ]] && kill "$redis_pid" 2>/dev/null || true
  "$root/scripts/test-servers.sh" stop "$work/servers" >/dev/null 2>&1 || true
}
trap cleanup EXIT
say "work directory: $work"

# ---- servers
unset SQLLOCK_TEST_PG_URI SQLLOCK_TEST_MYSQL_URI
"$root/scripts/test-servers.sh" start "$work/servers" >&2
set -a
. "$work/servers/env"
set +a
export SQLLOCK_TEST_REQUIRE_SERVERS=1
pgbin=$SQLLOCK_TEST_PG_BIN
# pg_stat_statements counts the renewal statements; it must be loaded at server start.
"$pgbin/psql" -qX "$SQLLOCK_TEST_PG_URI" -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
"$root/scripts/test-servers.sh" restart-pg "$work/servers" >&2

# ---- one hot name, many processes (issue 26); run last in the full run, or alone (--only scale)
scale_section() {
  local ns=(8 64) kinds=(table semaphore fair xact) max_n n names path kind uri secs
  ((scale_long)) && ns+=(512 2000)
  max_n=${ns[-1]}
  say "scale: N = ${ns[*]}, directly and through PgBouncer"
  mkdir -p "$work/scale"
  git -C "$root" describe --always --dirty >"$work/scale/commit" 2>/dev/null || echo unknown >"$work/scale/commit"
  cat /proc/loadavg >"$work/scale/loadavg-before"
  # A waiting process connected directly may hold 3 server connections (its pool of 2 and a LISTEN
  # connection); behind PgBouncer up to 3 client connections. PgBouncer needs a file descriptor
  # for each, and a process of sqllock_contention about 4.
  if ((scale_long)); then
    ulimit -n "$(ulimit -Hn)"
    (($(ulimit -n) >= 4 * max_n + 1000)) ||
      { say "scale: ulimit -n is $(ulimit -n), too low for $max_n processes"; return 1; }
  fi
  "$pgbin/psql" -qX "$SQLLOCK_TEST_PG_URI" -c "ALTER SYSTEM SET max_connections = $((3 * max_n + 100))"
  "$root/scripts/test-servers.sh" restart-pg "$work/servers" >&2
  # The test servers' PgBouncer pools 2 server connections (for fault tests); a production-like
  # pool of 20 here, as in issue 26's measurements. Restarted from this shell: it gets its ulimit.
  sed -i -e 's/^default_pool_size = .*/default_pool_size = 20/' \
    -e "s/^max_client_conn = .*/max_client_conn = $((3 * max_n + 100))/" "$SQLLOCK_TEST_PGBOUNCER_INI"
  grep -q '^listen_backlog' "$SQLLOCK_TEST_PGBOUNCER_INI" || echo 'listen_backlog = 4096' >>"$SQLLOCK_TEST_PGBOUNCER_INI"
  "$root/scripts/test-servers.sh" restart-pgbouncer "$work/servers" >&2
  for path in direct pgbouncer; do
    if [[ "$path" == direct ]]; then uri=$SQLLOCK_TEST_PG_URI; else uri="$SQLLOCK_TEST_PGBOUNCER_OWNER_URI?prepare=off"; fi
    for names in one each; do
      for n in "${ns[@]}"; do
        secs=8
        ((quick)) && secs=2
        ((n >= 512)) && secs=20
        # Kinds alternate at each N, so that a change in the machine's load hits them alike.
        for kind in "${kinds[@]}"; do
          say "scale: $kind, $n processes, names $names, $path"
          "$contention" --uri "$uri" --kind "$kind" --processes "$n" --seconds "$secs" --names "$names" \
            --admin-uri "$SQLLOCK_TEST_PG_URI" --label "$path" >>"$work/scale/results.jsonl" ||
            say "scale: sqllock_contention failed ($kind, $n, $names, $path)"
        done
      done
    done
  done
  cat /proc/loadavg >"$work/scale/loadavg-after"
}

# SQLLOCK_BENCH_REPORT_DIR: write the report and plots there instead of docs/ (a trial run).
report_dir=${SQLLOCK_BENCH_REPORT_DIR:-$root/docs}
if [[ "$only" == scale ]]; then
  scale_section
  /usr/bin/python3 "$root/bench/report.py" --only scale --work "$work" --out "$report_dir/benchmarks.md" \
    --plots "$report_dir"
  say "rewrote the scale section of $report_dir/benchmarks.md (raw results in $work/scale)"
  exit 0
fi

free_port() {
  local p
  while :; do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    ! grep -qi ":$(printf '%04X' "$p") " /proc/net/tcp /proc/net/tcp6 2>/dev/null && break
  done
  echo "$p"
}
redis_port=$(free_port)
mkdir "$work/redis"
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/redis" \
  --daemonize yes --pidfile "$work/redis/redis.pid" --logfile "$work/redis/redis.log"
for _ in $(seq 100); do [[ -s "$work/redis/redis.pid" ]] && break; sleep 0.05; done
redis_pid=$(cat "$work/redis/redis.pid")
until redis-cli -p "$redis_port" ping >/dev/null 2>&1; do sleep 0.05; done
export SQLLOCK_BENCH_REDIS=127.0.0.1:$redis_port

say "installing the npm advisory-lock peer into $work/npm"
mkdir "$work/npm"
(cd "$work/npm" && npm install --silent --no-audit --no-fund advisory-lock pg >/dev/null)
peer_version=$(node -p "require('$work/npm/node_modules/advisory-lock/package.json').version")

# ---- sqllock, raw SQL in the same process, Redis
export SQLLOCK_BENCH_SECONDS=$seconds SQLLOCK_BENCH_MAX_ROWS=$max_rows
say "sqllock_bench (every case but the cycles and memory)"
# One benchmark filter's cases, written as JSON to a file.
bench_to() { "$bench" --benchmark_filter="$1" --benchmark_out="$2" --benchmark_out_format=json >&2; }
bench_to '-memory|cycle_t|count_down' "$work/bench.json"
# sqllock and its raw twin alternate, twice each, so a change in the machine's load between them
# hits both; the report takes the better of the two runs of each.
mkdir "$work/cycles"
for pair in table.pg table.mariadb table.sqlite advisory.pg named.mariadb row.pg row.mariadb \
  semaphore.pg semaphore.mariadb semaphore.sqlite fair.pg fair.mariadb fair.sqlite rw.pg rw.mariadb rw.sqlite; do
  for t in 1 8; do
    for round in 1 2; do
      for impl in raw sqllock; do
        bench_to "^$impl\.$pair\.cycle_t$t/" "$work/cycles/$impl.$pair.t$t.$round.json"
      done
    done
  done
done
# Latch count-downs against the same statements raw, alternating the same way.
for db in pg mariadb sqlite; do
  for c in count_down count_down_participant; do
    for t in 1 8; do
      for round in 1 2; do
        for impl in raw sqllock; do
          bench_to "^$impl\.latch\.$db\.${c}_t$t/" "$work/cycles/$impl.latch.$db.$c.t$t.$round.json"
        done
      done
    done
  done
done
# One multi_lock of 10 names against 10 table locks taken one after another, alternating.
for db in pg mariadb sqlite; do
  for t in 1 8; do
    for round in 1 2; do
      for kind in table10 multi10; do
        bench_to "^sqllock\.$kind\.$db\.cycle_t$t/" "$work/cycles/sqllock.$kind.$db.t$t.$round.json"
      done
    done
  done
done
# Read levels of rw_lock: each thread its own name, against 8 readers of one name, alternating.
for db in pg mariadb sqlite; do
  for round in 1 2; do
    for c in cycle_t8 one_name_cycle_t8; do
      bench_to "^sqllock\.rw_shared\.$db\.$c/" "$work/cycles/sqllock.rw_shared.$db.$c.$round.json"
    done
  done
  bench_to "^sqllock\.rw_shared\.$db\.cycle_t1/" "$work/cycles/sqllock.rw_shared.$db.cycle_t1.json"
done
# ?prepare=off (unnamed statements, for PgBouncer in transaction mode): sqllock only, beside the
# prepared runs above.
for pair in table.pg_unnamed advisory.pg_unnamed; do
  for t in 1 8; do
    for round in 1 2; do
      bench_to "^sqllock\.$pair\.cycle_t$t/" "$work/cycles/sqllock.$pair.t$t.$round.json"
    done
  done
done
for round in 1 2; do
  bench_to '^peer\.redis' "$work/cycles/redis.$round.json"
done
# Memory cases each in a fresh process, so no freed memory of another case hides growth.
for c in table.pg table.mariadb table.sqlite advisory.pg named.mariadb; do
  bench_to "^sqllock\.$c\.memory" "$work/memory-$c.json"
done

# ---- the same SQL through pgbench and the mariadb client
for i in 0 1; do
  mkdir -p "$work/sql$i"
  "$build/bench/sqllock_bench_sql" "$work/sql$i" "${mysql_cycles[$i]}"
done
pg_defines=(-D owner=pgbench-owner -D session=pgbench-session -D host="$(hostname)" -D pid=$$ -D thread=1
  -D lease=30000 -D renew=1 -D channel="$(cat "$work/sql0/pg_channel")")
"$pgbin/pgbench" -n -M prepared -f "$work/sql0/pg_setup.sql" -c 8 -j 8 -t 1 "$SQLLOCK_TEST_PG_URI" >/dev/null 2>&1
mkdir "$work/pgbench"
for kind in table advisory row; do
  for c in 1 8; do
    say "pgbench $kind, $c clients"
    (cd "$work/pgbench" && "$pgbin/pgbench" -n -M prepared -f "$work/sql0/pg_$kind.sql" -c "$c" -j "$c" \
      -T "$seconds" -l --log-prefix="$kind-$c" "${pg_defines[@]}" "$SQLLOCK_TEST_PG_URI" >"$kind-$c.out" 2>&1)
  done
done

mkdir "$work/mariadb"
my=(mariadb --no-defaults -h 127.0.0.1 -P "$SQLLOCK_TEST_MY_PORT" -u "$SQLLOCK_TEST_MY_USER"
  "-p$SQLLOCK_TEST_MY_PASSWORD" sqllock_test)
for kind in table named row; do
  for i in 0 1; do
    c=$((i == 0 ? 1 : 8))
    say "mariadb client $kind, $c clients"
    start=$(date +%s%N)
    for ((k = 0; k < c; k++)); do
      { printf "SET @r='myc-%d', @owner='mariadb-owner-%d', @session='mariadb-session', @host='%s', @pid=%d," \
          "$k" "$k" "$(hostname)" $$
        printf " @thread='%d', @lease=30000, @renew=1, @name='sqllock:myc-%052d', @zero='0';\n" "$k" "$k"
        cat "$work/sql$i/my_$kind.sql"; } | "${my[@]}" >/dev/null &
    done
    wait
    end=$(date +%s%N)
    echo "$kind $c $((c * mysql_cycles[i])) $(((end - start) / 1000))" >>"$work/mariadb/results.txt"
  done
done

say "npm advisory-lock $peer_version"
for c in 1 8; do
  NODE_PATH="$work/npm/node_modules" node "$root/bench/peer/advisory_lock_peer.js" "$SQLLOCK_TEST_PG_URI" \
    "$seconds" "$c" >"$work/npm-$c.json"
done

# ---- where the client's time goes in one cycle
say "callgrind: sqllock.table.pg.cycle_t1"
# Only the cycles themselves are counted (--toggle-collect), not start-up or background threads.
SQLLOCK_BENCH_SECONDS=2 valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
  --toggle-collect='*lockable_locker*run_locked*' \
  "$bench" --benchmark_filter='^sqllock\.table\.pg\.cycle_t1' --benchmark_out="$work/callgrind.json" \
  --benchmark_out_format=json >/dev/null 2>"$work/callgrind.log"
callgrind_annotate --inclusive=no --threshold=100 "$work/callgrind.out" >"$work/callgrind-self.txt"
callgrind_annotate --inclusive=yes --threshold=99 "$work/callgrind.out" >"$work/callgrind-inclusive.txt"

scale_section

# ---- the report
/usr/bin/python3 "$root/bench/report.py" --work "$work" --out "$report_dir/benchmarks.md" --plots "$report_dir" \
  --quick "$quick" --seconds "$seconds" --peer-version "$peer_version"
say "wrote $report_dir/benchmarks.md (raw results in $work)"
