#!/usr/bin/env bash
# Runs one example of examples/ the way its README says, against a test database, and checks
# what the example promises. ctest runs it (tests/examples.cmake):
#
#   run-example-tests.sh TEST DATABASE [ENV_FILE]
#
#   cron             the crontab line of cron-single-instance/: a run that starts while another
#                    works, then three at once: the job runs once each time, the others exit 1
#                    at once and say nothing; the lock is gone afterwards
#   leader-election  three workers; the leader is SIGKILLed, then its successor's lock is
#                    released by force: one leader at a time, fences only increase, the first
#                    take-over waits for the dead leader's lease, the second leader steps down
#   money-transfer-lock_row, money-transfer-with_row_lock, money-transfer-mixed
#                    four processes transfer money at once (PostgreSQL): the total is unchanged
#                    and no balance is negative
#   reaper           the crontab line of reaper/, in a database of its own: it deletes the row of
#                    a holder that crashed long ago and keeps a just-expired and a live one. (The
#                    systemd unit's ExecStart is run by reaper_cli_test,
#                    TheShippedSystemdUnitCommandLineWorks.)
#
# DATABASE: postgresql, mariadb or sqlite. Programs come from SQLLOCK_CLI, SQLLOCK_REAPER,
# LEADER_ELECTION and MONEY_TRANSFER. Servers as in tests/support/test_env.hpp: the
# SQLLOCK_TEST_{PG,MYSQL}_URI and …_RUNTIME_URI variables, else the env file of the `servers`
# fixture (SQLLOCK_TEST_ENV_FILE, else ENV_FILE). The example programs connect as the runtime
# role; migrations and table creation use the owner. A database (or a client program a test needs:
# psql, mariadb/mysql, sqlite3) that is missing skips the test (exit 77), or fails it when CI or
# SQLLOCK_TEST_REQUIRE_SERVERS is set. Upper time bounds stretch by SQLLOCK_TEST_TIME_SCALE
# (default 1; 3 when SQLLOCK_TEST_SANITIZED=1), as in tests/support/time_scale.hpp.
set -euo pipefail

examples=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
test_name=${1:?usage: run-example-tests.sh TEST DATABASE [ENV_FILE]}
database=${2:?usage: run-example-tests.sh TEST DATABASE [ENV_FILE]}
env_file=${SQLLOCK_TEST_ENV_FILE:-${3:-}}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sqllock-example.XXXXXX")
started=()        # background processes this script started (killed if it ends early)
cleanup_sql=()    # "URI<TAB>STATEMENT" run at exit: dropping what the test created

# ---- helpers ---------------------------------------------------------------------------------

say() { echo "[$(date +%T.%3N)] $*"; }

show_outputs() {
  local f
  for f in "$tmp"/*.out "$tmp"/*.err; do
    [[ -s "$f" ]] || continue
    echo "---- ${f##*/}"
    tail -n 40 "$f"
  done
}

fail() {
  echo "FAIL: $*" >&2
  show_outputs >&2
  exit 1
}

# check DESCRIPTION COMMAND…: the test fails unless COMMAND succeeds.
check() {
  local what=$1
  shift
  if "$@"; then say "ok: $what"; else fail "$what"; fi
}

# shellcheck source=../scripts/lib/required.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/required.sh"

unavailable() {
  if required; then fail "$* (CI or SQLLOCK_TEST_REQUIRE_SERVERS is set: a missing server fails)"; fi
  echo "SKIP: $*"
  exit 77
}

# setting KEY: from the environment, else from the fixture's env file.
setting() {
  local v=${!1:-}
  if [[ -z "$v" && -n "$env_file" && -f "$env_file" ]]; then
    v=$(sed -n "s/^\(export \)\{0,1\}$1=//p" "$env_file" | tail -n 1)
  fi
  printf '%s' "$v"
}

now_ms() { date +%s%3N; }

if [[ -n "${SQLLOCK_TEST_TIME_SCALE:-}" ]]; then
  scale=$SQLLOCK_TEST_TIME_SCALE
elif [[ "${SQLLOCK_TEST_SANITIZED:-0}" == 1 ]]; then
  scale=3
else
  scale=1
fi
if ! [[ "$scale" =~ ^[0-9]+([.][0-9]+)?$ ]] || ! awk -v s="$scale" 'BEGIN { exit !(s >= 1 && s <= 100) }'; then
  fail "SQLLOCK_TEST_TIME_SCALE must be a number from 1 to 100, not '$scale'"
fi

# scaled N: N (milliseconds or seconds) × the time scale, rounded down.
scaled() { awk -v n="$1" -v s="$scale" 'BEGIN { printf "%d", n * s }'; }

# wait_until TIMEOUT_MS DESCRIPTION COMMAND…: polls COMMAND every 50 ms; fails the test on timeout.
wait_until() {
  local timeout=$1 what=$2 deadline
  shift 2
  deadline=$(($(now_ms) + timeout))
  until "$@" 2>/dev/null; do
    (($(now_ms) < deadline)) || fail "$what: not within $timeout ms"
    sleep 0.05
  done
}

# program VAR: the path in $VAR, which ctest sets to a program of the build.
program() {
  local path=${!1:-}
  [[ -n "$path" && -x "$path" ]] || fail "$1 is not set to a program (run from ctest: tests/examples.cmake)"
  printf '%s' "$path"
}

# sql URI STATEMENT: runs STATEMENT with the command-line client of URI's database; prints the
# rows, fields separated by tabs.
sql() {
  local uri=$1 statement=$2 client
  case "$uri" in
    postgresql://* | postgres://*)
      command -v psql >/dev/null || unavailable "psql is not installed"
      psql "$uri" -XqAt -F $'\t' -v ON_ERROR_STOP=1 -c "$statement"
      ;;
    mysql://* | mariadb://*)
      client=$(command -v mariadb || command -v mysql) || unavailable "the mariadb/mysql client is not installed"
      local re='^[a-z]+://([^:@/]*)(:([^@/]*))?@([^:/?]+)(:([0-9]+))?(/([^?]*))?'
      [[ "$uri" =~ $re ]] || fail "cannot read the MySQL URI $uri"
      local user=${BASH_REMATCH[1]} password=${BASH_REMATCH[3]} host=${BASH_REMATCH[4]}
      local port=${BASH_REMATCH[6]:-3306} db=${BASH_REMATCH[8]}
      MYSQL_PWD=$(printf '%b' "${password//%/\\x}") "$client" --protocol=TCP -h "$host" -P "$port" \
        -u "$(printf '%b' "${user//%/\\x}")" ${db:+-D "$db"} -N -B -e "$statement"
      ;;
    sqlite://*)
      command -v sqlite3 >/dev/null || unavailable "sqlite3 (the SQLite shell) is not installed"
      sqlite3 -batch -separator $'\t' -cmd '.timeout 10000' "${uri#sqlite://}" "$statement"
      ;;
    *) fail "no SQL client for $uri" ;;
  esac
}

# with_database URI NAME: URI with its database (the path) replaced by NAME.
with_database() {
  local scheme=${1%%://*} rest=${1#*://} query=
  if [[ "$rest" == *\?* ]]; then
    query="?${rest#*\?}"
    rest=${rest%%\?*}
  fi
  printf '%s://%s/%s%s' "$scheme" "${rest%%/*}" "$2" "$query"
}

# fresh_database: points owner and runtime at a new, empty database (dropped at exit), for a
# test that works on the default lock table, which other tests share in the main database.
fresh_database() {
  [[ "$database" == sqlite ]] && return 0  # already a new file
  local name="sqllock_ex_${test_name//-/_}_$$_$RANDOM"
  sql "$owner" "CREATE DATABASE $name" >/dev/null || fail "cannot create the database $name"
  if [[ "$database" == postgresql ]]; then
    cleanup_sql+=("$owner"$'\t'"DROP DATABASE IF EXISTS $name WITH (FORCE)")
  else
    cleanup_sql+=("$owner"$'\t'"DROP DATABASE IF EXISTS $name")
  fi
  owner=$(with_database "$owner" "$name")
  runtime=$(with_database "$runtime" "$name")
}

migrate() {
  "$sqllock" migrate --db "$owner" >"$tmp/migrate.log" 2>&1 || fail "sqllock migrate: $(cat "$tmp/migrate.log")"
}

# crontab_command FILE: the command of the one job line of a cron.d file (five time fields, the
# user, the command).
crontab_command() {
  local lines
  mapfile -t lines < <(grep -Ev '^[[:space:]]*(#|$)|^[A-Za-z_][A-Za-z0-9_]*=' "$1")
  [[ ${#lines[@]} -eq 1 ]] || fail "$1 should have exactly one job line, has ${#lines[@]}"
  sed -E 's/^([^[:space:]]+[[:space:]]+){6}//' <<<"${lines[0]}"
}

# replace TEXT FROM TO: TEXT with FROM replaced by TO; fails when TEXT lacks FROM.
replace() {
  [[ "$1" == *"$2"* ]] || fail "'$1' does not contain '$2' any more: update this test"
  printf '%s' "${1/"$2"/"$3"}"
}

# in_file FILE TEXT: FILE contains TEXT literally (a README shows the line a test runs).
in_file() { grep -qF -- "$2" "$1"; }

cleanup() {
  local code=$? pid entry
  for pid in "${started[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for entry in "${cleanup_sql[@]}"; do (sql "${entry%%$'\t'*}" "${entry#*$'\t'}") >/dev/null 2>&1 || true; done
  rm -rf "$tmp"
  exit "$code"
}
trap cleanup EXIT

# ---- the database ----------------------------------------------------------------------------

sqllock=$(program SQLLOCK_CLI)
case "$database" in
  postgresql)
    owner=$(setting SQLLOCK_TEST_PG_URI)
    runtime=$(setting SQLLOCK_TEST_PG_RUNTIME_URI)
    ;;
  mariadb)
    owner=$(setting SQLLOCK_TEST_MYSQL_URI)
    runtime=$(setting SQLLOCK_TEST_MYSQL_RUNTIME_URI)
    ;;
  sqlite)
    owner="sqlite://$tmp/locks.db"
    runtime=$owner
    ;;
  *) fail "unknown database '$database' (postgresql, mariadb or sqlite)" ;;
esac
[[ -n "$owner" ]] || unavailable "no $database server configured (SQLLOCK_TEST_*_URI; env file: ${env_file:-none})"
runtime=${runtime:-$owner}

# ---- cron-single-instance --------------------------------------------------------------------

test_cron() {
  migrate
  local dir=$examples/cron-single-instance lock="ex-cron-$$-$database" command work_s
  command=$(crontab_command "$dir/crontab")
  check "README.md shows the crontab line" in_file "$dir/README.md" "$(grep -F ' -- /opt/app/report.sh' "$dir/crontab")"
  # The build's programs instead of the installed ones, and a lock name of this run's own.
  command=$(replace "$command" "/usr/local/bin/sqllock " "$sqllock ")
  command=$(replace "$command" "/opt/app/report.sh" "$dir/report.sh")
  command=$(replace "$command" "--lock report " "--lock $lock ")
  say "cron's command: $command"
  work_s=$(awk -v s="$scale" 'BEGIN { printf "%d", 2 + 2 * s }')  # the job's duration: 4 s, more when slow
  local runs=$tmp/reports/runs.log

  # cron_run NAME: runs the line as cron does (sh -c, the crontab's variables in the environment)
  # in the background; when it has ended, NAME.end_ms has the time and then NAME.code its status.
  cron_run() {
    (
      set +e
      SQLLOCK_DB=$runtime REPORT_DIR=$tmp/reports REPORT_WORK_SECONDS=$work_s \
        /bin/sh -c "$command" >"$tmp/$1.out" 2>"$tmp/$1.err"
      code=$?
      now_ms >"$tmp/$1.end_ms"
      echo "$code" >"$tmp/$1.code.new" && mv "$tmp/$1.code.new" "$tmp/$1.code"  # appears whole
    ) &
    started+=($!)
  }
  starts() { grep -c ' start ' "$runs" || true; }
  dones() { grep -c ' done ' "$runs" || true; }

  # 1. The previous run is still working when the next one starts.
  cron_run first
  wait_until "$(scaled 10000)" "the first run's job started" grep -q ' start ' "$runs"
  local t0
  t0=$(now_ms)
  cron_run overlap
  wait_until "$(scaled 3000)" "the overlapping run gave up at once (-n)" test -f "$tmp/overlap.code"
  say "the overlapping run ended after $(($(cat "$tmp/overlap.end_ms") - t0)) ms"
  check "the overlapping run exits 1, the documented 'not obtained' status" [ "$(cat "$tmp/overlap.code")" = 1 ]
  check "the overlapping run says nothing (--quiet)" [ ! -s "$tmp/overlap.out" -a ! -s "$tmp/overlap.err" ]
  wait_until "$(scaled $((work_s * 1000 + 10000)))" "the first run ended" test -f "$tmp/first.code"
  check "the overlapping run ended before the first one: it did not wait" \
    [ "$(cat "$tmp/overlap.end_ms")" -lt "$(cat "$tmp/first.end_ms")" ]
  check "the first run exits 0, its job's status" [ "$(cat "$tmp/first.code")" = 0 ]
  check "the job ran once: one start and one done in runs.log" [ "$(starts)" = 1 -a "$(dones)" = 1 ]

  # 2. Three hosts' crons fire in the same second.
  cron_run a
  cron_run b
  cron_run c
  wait_until "$(scaled $((work_s * 1000 + 10000)))" "the three runs ended" \
    test -f "$tmp/a.code" -a -f "$tmp/b.code" -a -f "$tmp/c.code"
  local codes
  codes=$(cat "$tmp/a.code" "$tmp/b.code" "$tmp/c.code" | sort | tr '\n' ' ')
  check "of three runs at once one ran the job (0) and two were busy (1): $codes" [ "$codes" = "0 1 1 " ]
  check "the job ran once more: two starts and two dones in runs.log" [ "$(starts)" = 2 -a "$(dones)" = 2 ]
  reported() { compgen -G "$tmp/reports/report-*.txt" >/dev/null; }
  check "the job wrote its report" reported

  # 3. Nothing is left behind: the lock's row is gone (status --lock exits 1 for no row).
  local status=0
  "$sqllock" status --db "$runtime" --lock "$lock" >"$tmp/status.out" 2>&1 || status=$?
  check "the lock is released afterwards (sqllock status --lock exits 1)" [ "$status" = 1 ]
}

# ---- leader-election -------------------------------------------------------------------------

test_leader_election() {
  migrate
  local election lock="ex-leader-$$-$database" log_db=$tmp/leader_log.db seconds w
  election=$(program LEADER_ELECTION)
  command -v sqlite3 >/dev/null || unavailable "sqlite3 (the SQLite shell) is not installed"
  seconds=$(awk -v s="$scale" 'BEGIN { printf "%d", 8 + 4 * s }')  # each worker's run: 12 s, more when slow
  log() { sql "sqlite://$log_db" "$1"; }
  at_least() { [ "$(log "$1")" -ge "$2" ]; }
  declare -A pid
  for w in w1 w2 w3; do
    "$election" "$runtime" "$w" "$seconds" "$log_db" "$lock" >"$tmp/$w.out" 2>"$tmp/$w.err" &
    pid[$w]=$!
    started+=($!)
  done

  # 1. The leader dies (SIGKILL): its lease runs out, then another worker takes over.
  wait_until "$(scaled 15000)" "a leader wrote 5 entries" at_least "SELECT count(*) FROM leader_log" 5
  local leader1 fence1 asked_ms expires_at_ms killed_ms code=0
  read -r leader1 fence1 < <(log "SELECT worker, fence FROM leader_log ORDER BY rowid DESC LIMIT 1")
  # When does its lease end, by the database's clock? Renewals only move that later.
  asked_ms=$(now_ms)
  "$sqllock" status --db "$runtime" --lock "$lock" --json >"$tmp/status.json" 2>&1 ||
    fail "sqllock status --json: $(cat "$tmp/status.json")"
  {
    kill -KILL "${pid[$leader1]}"
    killed_ms=$(now_ms)
    wait "${pid[$leader1]}"
  } 2>/dev/null || code=$?  # (without bash's "Killed" message)
  check "the lock's row names the leader's process" grep -q "\"pid\":${pid[$leader1]}," "$tmp/status.json"
  expires_at_ms=$(sed -n 's/.*"expires_in_ms":\(-\{0,1\}[0-9]*\).*/\1/p' "$tmp/status.json")
  [[ -n "$expires_at_ms" ]] || fail "no expires_in_ms in: $(cat "$tmp/status.json")"
  expires_at_ms=$((asked_ms + expires_at_ms))
  say "killed the leader $leader1 (fence $fence1); its lease ends $((expires_at_ms - killed_ms)) ms later or after"
  check "the killed leader died of SIGKILL" [ "$code" = 137 ]
  check "until then one leader only, with one fence" \
    [ "$(log "SELECT count(DISTINCT worker) || ' ' || count(DISTINCT fence) FROM leader_log WHERE at_ms <= $killed_ms")" = "1 1" ]
  wait_until "$(scaled 8000)" "another worker took over" at_least "SELECT count(*) FROM leader_log WHERE fence > $fence1" 1
  local leader2 fence2 first2_ms delay
  read -r leader2 fence2 first2_ms < <(log "SELECT worker, fence, min(at_ms) FROM leader_log WHERE fence > $fence1
                                            GROUP BY fence ORDER BY fence LIMIT 1")
  delay=$((first2_ms - killed_ms))
  say "$leader2 took over with fence $fence2 after $delay ms"
  check "the new leader is another worker" [ "$leader2" != "$leader1" ]
  # (200 ms for rounding: the database's and this host's clocks are one clock here.)
  check "the take-over waited for the dead leader's lease to end" [ "$first2_ms" -ge $((expires_at_ms - 200)) ]
  # The lease is 3 s: the take-over comes within it, a second of retrying and 2 s to spare.
  check "the take-over came within the lease + 1 s of retrying + 2 s ($delay ms)" [ "$delay" -le "$(scaled 6000)" ]

  # 2. The new leader's lock is deleted by force: it finds out (on_lost, lost_token()) and steps
  # down; meanwhile its stale writes, if any, are refused by the log (fencing).
  wait_until "$(scaled 5000)" "$leader2 wrote 3 entries" at_least "SELECT count(*) FROM leader_log WHERE fence = $fence2" 3
  "$sqllock" release --db "$runtime" --lock "$lock" --force >"$tmp/release.out" 2>&1 ||
    fail "sqllock release --force: $(cat "$tmp/release.out")"
  say "released $leader2's lock by force"
  wait_until "$(scaled 3000)" "$leader2 stepped down (lease renewal every second finds the lock gone)" \
    grep -Eq "event=step_down fence=$fence2 .*reason=(lost|rejected)" "$tmp/$leader2.out"
  wait_until "$(scaled 5000)" "a third term began" at_least "SELECT count(*) FROM leader_log WHERE fence > $fence2" 1
  say "$leader2: $(grep -E "event=(lost|rejected|step_down)" "$tmp/$leader2.out" | tr '\n' ';')"

  # 3. The others run their time out, step down and release the lock.
  for w in w1 w2 w3; do
    [[ "$w" == "$leader1" ]] && continue
    code=0
    wait "${pid[$w]}" || code=$?
    check "$w exits 0" [ "$code" = 0 ]
  done
  check "writes were refused only from the leader whose lock was released by force" \
    [ -z "$(cat "$tmp"/w*.out | grep 'event=rejected' | grep -v "fence=$fence2\$")" ]
  check "every fence belongs to one worker" \
    [ "$(log "SELECT count(*) FROM (SELECT fence FROM leader_log GROUP BY fence HAVING count(DISTINCT worker) > 1)")" = 0 ]
  check "fences never decrease in the order of the writes" \
    [ "$(log "SELECT count(*) FROM leader_log a JOIN leader_log b ON b.rowid > a.rowid AND b.fence < a.fence")" = 0 ]
  check "terms do not overlap in time: one leader at a time" \
    [ "$(log "WITH t AS (SELECT fence, min(at_ms) lo, max(at_ms) hi FROM leader_log GROUP BY fence)
              SELECT count(*) FROM t a JOIN t b ON a.fence < b.fence AND b.lo < a.hi")" = 0 ]
  say "terms: $(log "SELECT fence || ':' || worker || ':' || count(*) FROM leader_log GROUP BY fence ORDER BY fence" | tr '\n' ' ')"
  local status=0
  "$sqllock" status --db "$runtime" --lock "$lock" >"$tmp/status.out" 2>&1 || status=$?
  check "the lock is released at the end (sqllock status --lock exits 1)" [ "$status" = 1 ]
}

# ---- money-transfer --------------------------------------------------------------------------

test_money_transfer() {  # test_money_transfer MODE MODE MODE MODE: one process per MODE
  [[ "$database" == postgresql ]] || fail "the money-transfer example is for PostgreSQL"
  migrate
  local transfer table="ex_accounts_$$_${test_name##*-}" per=300 i mode code done_total=0
  transfer=$(program MONEY_TRANSFER)
  cleanup_sql+=("$owner"$'\t'"DROP TABLE IF EXISTS $table")
  # The table's owner creates it (the runtime role may not); then the runtime role works on it.
  "$transfer" "$owner" lock_row 0 "$table" >"$tmp/create.out" 2>"$tmp/create.err" ||
    fail "creating the accounts table failed"
  check "a new table holds 5 × 100" grep -q 'total=500 expected_total=500 min_balance=100' "$tmp/create.out"

  local pids=()
  i=0
  for mode in "$@"; do
    i=$((i + 1))
    "$transfer" "$runtime" "$mode" "$per" "$table" >"$tmp/p$i-$mode.out" 2>"$tmp/p$i-$mode.err" &
    pids+=($!)
    started+=($!)
  done
  i=0
  for mode in "$@"; do
    code=0
    wait "${pids[$i]}" || code=$?
    i=$((i + 1))
    check "process $i ($mode, $per transfers) exits 0: invariant held at its end" [ "$code" = 0 ]
    done_total=$((done_total + $(sed -n 's/.* done=\([0-9]*\) .*/\1/p' "$tmp/p$i-$mode.out")))
  done
  say "transfers made: $done_total of $((per * $#)) (the others lacked the money)"
  check "transfers were made" [ "$done_total" -gt 0 ]
  "$transfer" "$runtime" "$1" 0 "$table" >"$tmp/final.out" 2>"$tmp/final.err" || fail "the final check failed"
  check "the total is still 500 and no balance is negative: $(cat "$tmp/final.out")" \
    grep -Eq 'total=500 expected_total=500 min_balance=[0-9]+$' "$tmp/final.out"
}

# ---- reaper ----------------------------------------------------------------------------------

test_reaper() {
  local dir=$examples/reaper reaper command
  reaper=$(program SQLLOCK_REAPER)
  command=$(crontab_command "$dir/crontab")
  check "README.md shows the crontab line" in_file "$dir/README.md" "$(grep -F 'sqllock-reaper --once' "$dir/crontab")"
  check "README.md points to the systemd unit" in_file "$dir/README.md" "docs/sqllock-reaper.service"
  check "the unit exists" test -f "$examples/../docs/sqllock-reaper.service"
  command=$(replace "$command" "/usr/local/bin/sqllock-reaper " "$reaper ")
  say "cron's command: $command"
  # The line reaps the default table: give it a database of its own.
  sql "$owner" "SELECT 1" >/dev/null || fail "cannot reach $database with its client"
  fresh_database
  migrate

  # Holders that crash (SIGKILL) while holding a lock leave their rows behind.
  crash_holder() {  # crash_holder NAME TTL
    local code=0
    # shellcheck disable=SC2016  # $PPID: the parent of that shell, sqllock
    { "$sqllock" run --db "$runtime" --lock "$1" --ttl "$2" -- /bin/sh -c 'kill -KILL "$PPID"' \
      >"$tmp/crash.out"; } 2>/dev/null || code=$?  # (without bash's "Killed" message)
    [[ "$code" == 137 ]] || fail "sqllock run for $1 should have been killed (137), exited $code"
  }
  has_row() {  # has_row NAME: 0 when the lock table has NAME's row, 1 when not
    local status=0
    "$sqllock" status --db "$runtime" --lock "$1" >"$tmp/status.out" 2>&1 || status=$?
    [[ "$status" == 0 || "$status" == 1 ]] || fail "sqllock status exited $status: $(cat "$tmp/status.out")"
    return "$status"
  }
  crash_holder crashed-long-ago 1s
  crash_holder crashed-just-now 1s
  crash_holder crashed-alive 1h
  # The first crashed ten minutes ago: beyond the line's one minute of grace.
  case "$database" in
    postgresql) sql "$owner" "UPDATE distributed_lock SET acquired_at = acquired_at - interval '10 minutes',
                  renewed_at = renewed_at - interval '10 minutes', expires_at = expires_at - interval '10 minutes'
                  WHERE resource = 'crashed-long-ago'" >/dev/null ;;
    mariadb) sql "$owner" "UPDATE distributed_lock SET acquired_at = acquired_at - INTERVAL 10 MINUTE,
               renewed_at = renewed_at - INTERVAL 10 MINUTE, expires_at = expires_at - INTERVAL 10 MINUTE
               WHERE resource = 'crashed-long-ago'" >/dev/null ;;
    sqlite) sql "$owner" "UPDATE distributed_lock SET acquired_at = strftime('%Y-%m-%d %H:%M:%f', acquired_at, '-10 minutes'),
              renewed_at = strftime('%Y-%m-%d %H:%M:%f', renewed_at, '-10 minutes'),
              expires_at = strftime('%Y-%m-%d %H:%M:%f', expires_at, '-10 minutes')
              WHERE resource = 'crashed-long-ago'" >/dev/null ;;
  esac
  sleep 1.2  # crashed-just-now's lease of 1 s has ended too
  "$sqllock" status --db "$runtime" >"$tmp/before.out" 2>&1 || fail "sqllock status: $(cat "$tmp/before.out")"
  check "before the pass: two expired rows and a live one" \
    [ "$(grep -c ' expired$' "$tmp/before.out")" = 2 -a "$(grep -c ' held$' "$tmp/before.out")" = 1 ]

  # As cron runs it: sh -c, SQLLOCK_DB from the crontab's environment line.
  local code=0
  SQLLOCK_DB=$runtime /bin/sh -c "$command" >"$tmp/reaper.out" 2>"$tmp/reaper.err" || code=$?
  check "the crontab line exits 0" [ "$code" = 0 ]
  check "it printed nothing for cron to mail" [ ! -s "$tmp/reaper.out" -a ! -s "$tmp/reaper.err" ]
  check "the row of the holder that crashed long ago is gone" eval '! has_row crashed-long-ago'
  check "the just-expired row is kept for the grace minute" has_row crashed-just-now
  check "the live row is kept" has_row crashed-alive
}

# ---- main ------------------------------------------------------------------------------------

say "example test $test_name on $database (time scale $scale)"
case "$test_name" in
  cron) test_cron ;;
  leader-election) test_leader_election ;;
  money-transfer-lock_row) test_money_transfer lock_row lock_row lock_row lock_row ;;
  money-transfer-with_row_lock) test_money_transfer with_row_lock with_row_lock with_row_lock with_row_lock ;;
  money-transfer-mixed) test_money_transfer lock_row with_row_lock lock_row with_row_lock ;;
  reaper) test_reaper ;;
  *) fail "unknown test '$test_name'" ;;
esac
say "passed"
