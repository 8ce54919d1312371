#!/usr/bin/env bash
# High-availability database setups for the failover tests, in a directory of their own: a
# PostgreSQL 15 pair under pg_auto_failover, and a three-node MariaDB 10.11 Galera cluster. They
# take 15-60 s to start (pg_basebackup, state transfers), so they are not part of test-servers.sh.
#
#   ha-servers.sh start-pgaf DIR      pg_auto_failover: a monitor, node1 (primary) and node2
#                                     (synchronous secondary)
#   ha-servers.sh start-galera DIR    MariaDB + Galera 4: nodes 1, 2 and 3, state transfer by rsync
#   ha-servers.sh stop DIR            stop whatever start-* started in DIR and remove DIR
#   ha-servers.sh status DIR          print what is running
#   ha-servers.sh pgaf-primary DIR    print the current primary's node name (node1|node2), as the
#                                     monitor sees it
#   ha-servers.sh pgaf-kill-primary DIR
#                                     SIGKILL the primary's whole node (keeper, postmaster and
#                                     backends: a machine failure); prints its name
#   ha-servers.sh pgaf-rejoin DIR NODE
#                                     restart a killed node's keeper and wait until it is a
#                                     secondary again (pg_rewind when needed)
#   ha-servers.sh pgaf-wait-primary DIR SECONDS
#                                     wait until a primary commits a write through the multi-host
#                                     URI; prints its name (and, on stderr, the time since the kill)
#   ha-servers.sh galera-kill DIR N   SIGKILL node N (1..3)
#   ha-servers.sh galera-start DIR N  restart node N and wait until it is Synced (after a kill it
#                                     recovers its position first, so it catches up by IST)
#
# Everything listens on 127.0.0.1 only, on free random ports; data, sockets, logs and the state
# pg_autoctl keeps (HOME, XDG_*_DIR) are inside DIR (or in /tmp/sqllock-ha.* when DIR is too deep
# for Unix socket paths or when the postgres user cannot reach it). A start-* removes what an
# earlier start of the same kind left in DIR; the other kind, when running, is kept. Each start
# writes its KEY=VALUE lines and DIR/env holds them all:
#   SQLLOCK_TEST_HA_SCRIPT, SQLLOCK_TEST_HA_DIR   this script (absolute) and DIR
#   pg_auto_failover (start-pgaf):
#     SQLLOCK_TEST_PGAF_URI           postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2/sqllock_test
#                                     ?target_session_attrs=read-write&sslmode=disable (the owner;
#                                     libpq finds the primary)
#     SQLLOCK_TEST_PGAF_RUNTIME_URI   the same as sqllock_runtime, which may only read and write
#                                     rows (default privileges as in test-servers.sh)
#     SQLLOCK_TEST_PGAF_MONITOR_URI   the monitor (user autoctl_node, database pg_auto_failover;
#                                     tables pgautofailover.node and .event)
#     SQLLOCK_TEST_PGAF_MONITOR_PORT, SQLLOCK_TEST_PGAF_NODE{1,2}_PORT,
#     SQLLOCK_TEST_PGAF_MONITOR_DATA, SQLLOCK_TEST_PGAF_NODE{1,2}_DATA,
#     SQLLOCK_TEST_PGAF_SOCKET_DIR, SQLLOCK_TEST_PGAF_BIN (PostgreSQL 15's programs), SQLLOCK_TEST_PGAF_AUTOCTL (pg_autoctl)
#   Galera (start-galera):
#     SQLLOCK_TEST_GALERA_URI_{1,2,3}          mysql://sqllock:PASSWORD@127.0.0.1:Pn/sqllock_test
#                                              (ALL on *.*, as SQLLOCK_TEST_MYSQL_URI)
#     SQLLOCK_TEST_GALERA_RUNTIME_URI_{1,2,3}  as sqllock_runtime (rows of sqllock_* only)
#     SQLLOCK_TEST_GALERA_PORT_{1,2,3}, SQLLOCK_TEST_GALERA_USER, SQLLOCK_TEST_GALERA_PASSWORD,
#     SQLLOCK_TEST_GALERA_CNF_{1,2,3}, SQLLOCK_TEST_GALERA_LOG_{1,2,3}
#
# pg_auto_failover runs with tuned monitor timings (health check every 1 s, a node unhealthy
# after 3 s, primary_demote_timeout 3 s), so losing the primary's node costs about 6.5 s of
# writes instead of about 50 s; losing the secondary blocks commits about 4 s. The nodes run with
# fsync off (test data: it survives killed processes, not a machine crash) and a 128 MB
# shared_buffers; sqllock_test and the role sqllock_runtime are made on node1 before node2 copies
# it. Every pg_autoctl and PostgreSQL process runs as user postgres when the script runs as root.
# Galera nodes: wsrep_node_address with the gcomm port, rsync state transfer, a 64 MB buffer pool,
# the users and database sqllock_test of test-servers.sh (random passwords).
#
# Every server runs in a session (process group) of its own; `stop` and the kill commands signal
# exactly the process groups and PIDs this script started, checked against their command lines.
# Every wait is bounded and prints the end of the relevant log when it gives up. When the
# packages are missing, a start fails naming them if servers are required (CI or
# SQLLOCK_TEST_REQUIRE_SERVERS set) and otherwise warns and leaves its keys out of DIR/env.
# Packages: pg-auto-failover-cli postgresql-15-auto-failover; galera-4 mariadb-server
# mariadb-client rsync iproute2 (scripts/install-deps.sh installs them). As root, the Galera nodes
# run as user mysql: the rsync daemon of a state transfer, when started by root, would switch to
# user nobody, which may not write the joiner's data directory.
set -euo pipefail

script=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/$(basename "${BASH_SOURCE[0]}")
marker=.sqllock-ha-servers  # in DIR: this script made DIR, so it may delete it
RUNTIME_ROLE=sqllock_runtime
PG15=/usr/lib/postgresql/15/bin

# shellcheck source=lib/required.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/required.sh"
# shellcheck source=lib/proc.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/proc.sh"

# Waits up to $1 seconds until the command "${@:2}" succeeds; false on time-out.
wait_for() {
  local limit=$1 t0
  shift
  t0=$(now_ms)
  while (($(now_ms) - t0 < limit * 1000)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}

# A missing program: fail when servers are required, else warn. $1: what, $2: packages.
missing() {
  required && die "$1 is not installed (packages: $2; run scripts/install-deps.sh)"
  say "warning: $1 is not installed (packages: $2); its tests will be skipped"
}

# ---------------------------------------------------------------- state -----------------------
set_dir() {  # sets DIR (absolute) from $1, creating it
  [[ -n "${1:-}" ]] || die "missing DIR"
  [[ "$1" != *[[:space:]]* ]] || die "DIR must not contain white space: '$1'"
  mkdir -p "$1"
  DIR=$(cd "$1" && pwd -P)
}

set_paths() {  # the paths of both setups under BASE ($1)
  BASE=$1
  HA_HOME=$BASE/home  # HOME and XDG_*_DIR of pg_autoctl (its configuration and state)
  PGAF_HOME=$BASE/pgaf; PGAF_SOCK=$PGAF_HOME  # sockets of the monitor and both nodes
  GALERA_HOME=$BASE/galera
}

# Loads DIR/state; false when DIR holds nothing of this script.
load_state() {
  [[ -f "$DIR/$marker" && -f "$DIR/state" ]] || return 1
  # shellcheck disable=SC1091
  source "$DIR/state"
  set_paths "$BASE"
}

# Makes DIR ours (or checks it is) and chooses BASE; DIR/state remembers it.
claim_dir() {
  set_dir "$1"
  if load_state; then return 0; fi
  [[ ! -f "$DIR/$marker" && -n "$(ls -A "$DIR")" ]] &&
    die "$DIR is not empty and was not made by this script; not touching it"
  touch "$DIR/$marker"
  chmod 755 "$DIR"  # the postgres user must be able to traverse it
  local base=$DIR
  if ((${#DIR} > 70)) || { ((EUID == 0)) && ! { runuser -u postgres -- test -x "$DIR" &&
    runuser -u mysql -- test -x "$DIR"; }; }; then
    base=$(mktemp -d /tmp/sqllock-ha.XXXXXX)
    chmod 755 "$base"
  fi
  echo "BASE=$base" >"$DIR/state"
  set_paths "$base"
}

# DIR/env: the keys of every setup running in DIR.
write_env() {
  {
    echo "SQLLOCK_TEST_HA_SCRIPT=$script"
    echo "SQLLOCK_TEST_HA_DIR=$DIR"
    cat "$DIR/pgaf.env" "$DIR/galera.env" 2>/dev/null || true
  } >"$DIR/env"
}

env_value() {  # the value of key $2 in env file $1
  sed -n "s/^$2=//p" "$1" 2>/dev/null || true
}

# ---------------------------------------------------------------- pg_auto_failover ------------
PGAF_NODES=(node1 node2)

# pg_autoctl (and what it runs) as postgres, with its HOME, XDG directories and working
# directory inside BASE. setpriv and env exec, so a PID taken with $! is pg_autoctl's.
autoctl_cmd() {
  AUTOCTL=()
  ((EUID == 0)) && AUTOCTL=(setpriv --reuid=postgres --regid=postgres --init-groups)
  AUTOCTL+=(env -C "$HA_HOME" "HOME=$HA_HOME" "XDG_CONFIG_HOME=$HA_HOME/config"
    "XDG_DATA_HOME=$HA_HOME/data" "XDG_RUNTIME_DIR=$HA_HOME/run" "PG_CONFIG=$PG15/pg_config"
    "PGHOST=$PGAF_SOCK" "$PG_AUTOCTL")
}

pgaf_load() {  # ports and URIs of the running setup
  # shellcheck disable=SC2034  # read as ${!port}
  PGAF_PORT_monitor=$(env_value "$DIR/pgaf.env" SQLLOCK_TEST_PGAF_MONITOR_PORT)
  PGAF_PORT_node1=$(env_value "$DIR/pgaf.env" SQLLOCK_TEST_PGAF_NODE1_PORT)
  PGAF_PORT_node2=$(env_value "$DIR/pgaf.env" SQLLOCK_TEST_PGAF_NODE2_PORT)
  PGAF_URI=$(env_value "$DIR/pgaf.env" SQLLOCK_TEST_PGAF_URI)
  MON_URI=$(env_value "$DIR/pgaf.env" SQLLOCK_TEST_PGAF_MONITOR_URI)
  PG_AUTOCTL=$(env_value "$DIR/pgaf.env" SQLLOCK_TEST_PGAF_AUTOCTL)
  [[ -n "$PGAF_URI" && -n "$MON_URI" && -n "$PG_AUTOCTL" ]] ||
    die "no pg_auto_failover in $DIR (run start-pgaf first)"
  autoctl_cmd
}

mon_sql() { PGCONNECT_TIMEOUT=3 "$PG15/psql" "$MON_URI" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
# The monitor's view: "node1=primary/primary node2=secondary/secondary" (reported/goal state).
pgaf_states() {
  mon_sql "select string_agg(nodename || '=' || reportedstate || '/' || goalstate, ' ' order by nodeid)
           from pgautofailover.node" 2>/dev/null || true
}
# Waits up to $1 seconds until the states match the extended regular expression $2.
wait_states() {
  local t0 s
  t0=$(now_ms)
  while (($(now_ms) - t0 < $1 * 1000)); do
    s=$(pgaf_states)
    [[ "$s" =~ $2 ]] && return 0
    sleep 0.2
  done
  echo "timed out after $1 s waiting for node states '$2'; the monitor says: ${s:-nothing}" >&2
  return 1
}
pgaf_stable() {  # one primary/primary and one secondary/secondary
  local s
  s=$(pgaf_states)
  [[ "$s" == *=primary/primary* && "$s" == *=secondary/secondary* ]]
}

pgaf_keeper() { cat "$PGAF_HOME/$1.pgid" 2>/dev/null || true; }
pgaf_postmaster() { head -n 1 "$PGAF_HOME/$1/postmaster.pid" 2>/dev/null || true; }
pgaf_logs() {  # the logs of one instance ($1): the keeper's and PostgreSQL's latest
  echo "$PGAF_HOME/$1.log"
  find "$PGAF_HOME/$1/log" -name '*.log' 2>/dev/null | sort | tail -n 1
}

# Settings for every instance, in postgresql.auto.conf: it is read after pg_autoctl's own file
# (which sizes shared_buffers at a quarter of the machine's memory), and pg_basebackup copies it
# to the secondary. Test data: fsync off survives a crash of the server's processes (the kernel
# keeps the writes), which is all a failover test does, not a crash of the machine.
pgaf_conf() {  # $1: data directory; the monitor's settings follow on stdin
  echo "# Written by scripts/ha-servers.sh." >"$1/sqllock.conf"  # included by the template
  {
    echo "# Written by scripts/ha-servers.sh; ALTER SYSTEM keeps these lines."
    echo "unix_socket_directories = '$PGAF_SOCK'"
    echo "fsync = off"
    echo "shared_buffers = '128MB'"
    echo "work_mem = '4MB'"
    echo "maintenance_work_mem = '64MB'"
    echo "effective_cache_size = '512MB'"
    echo "max_connections = 200"
    # pg_basebackup and pg_rewind start with a checkpoint spread over 0.9 * checkpoint_timeout.
    echo "checkpoint_completion_target = 0.1"
    cat
  } >"$1/postgresql.auto.conf"
}

# A fresh data directory at $1: a copy of test-servers.sh's template when there is one (the same
# initdb options, `include 'sqllock.conf'` appended), else initdb.
pgaf_initdb() {
  local tpl
  tpl=$(template_dir pg "$PG15 $("$PG15/postgres" --version)") || tpl=
  if [[ -n "$tpl" && -f "$tpl/complete" ]] && cp -a "$tpl/data" "$1"; then return 0; fi
  as_pg "$PG15/initdb" -D "$1" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
    >"$1.initdb.log" 2>&1 || { tail_logs "$1.initdb.log"; return 1; }
  echo "include 'sqllock.conf'" >>"$1/postgresql.conf"
  if [[ -n "$tpl" ]]; then save_template "$tpl" "$1"; fi
}

# Starts pg_autoctl "$@" (for instance $NAME) in a session of its own, its output in NAME.log.
pgaf_spawn() {
  local name=$1 pid
  shift
  setsid "${AUTOCTL[@]}" "$@" </dev/null >>"$PGAF_HOME/$name.log" 2>&1 &
  pid=$!
  echo "$pid" >"$PGAF_HOME/$name.pgid"
}

# A node's keeper again (after pgaf_halt), on the data directory and port it had.
pgaf_run() {
  local name=$1 pm port=PGAF_PORT_$1
  pm=$(pgaf_postmaster "$name")
  # A killed postmaster may linger as a zombie, which PostgreSQL takes for a running server.
  if [[ -n "$pm" ]] && ! alive "$pm"; then
    rm -f "$PGAF_HOME/$name/postmaster.pid" "$PGAF_SOCK/.s.PGSQL.${!port}.lock"
  fi
  pgaf_spawn "$name" run --pgdata "$PGAF_HOME/$name"
}

# Stops instance $1 (monitor, node1, node2). $2 = fast: SIGTERM to the keeper, which stops
# PostgreSQL (fast shutdown), SIGKILL after 30 s; kill: SIGKILL to the keeper's process group
# (keeper, its services, the postmaster) and to every process of the postmaster (each backend
# is in a session of its own): what a machine failure leaves.
pgaf_halt() {
  local name=$1 how=$2 data=$PGAF_HOME/$1 keeper pm i
  local -a procs=()
  keeper=$(pgaf_keeper "$name")
  pm=$(pgaf_postmaster "$name")
  ours "$keeper" "$data" || keeper=
  ours "$pm" "$data" || pm=
  [[ -n "$keeper$pm" ]] || return 0
  if [[ "$how" == fast ]]; then
    if [[ -n "$keeper" ]]; then
      kill -TERM "$keeper" 2>/dev/null || true
    else
      kill -INT "$pm" 2>/dev/null || true  # no keeper: PostgreSQL's fast shutdown itself
    fi
    for ((i = 0; i < 30 * 50; i++)); do
      { [[ -z "$keeper" ]] || [[ -z "$(group_of "$keeper")" ]]; } && ! alive "$pm" && return 0
      sleep 0.02
    done
    echo "${0##*/}: $name did not stop within 30 s; killing it" >&2
  fi
  [[ -n "$keeper" ]] && mapfile -t procs < <(group_of "$keeper")
  [[ -n "$pm" ]] && mapfile -t -O "${#procs[@]}" procs < <(echo "$pm"; children_of "$pm")
  KILLED_AT=$(now_ms)
  if ((${#procs[@]})); then kill -KILL "${procs[@]}" 2>/dev/null || true; fi
  for i in "${procs[@]}"; do wait_exit "$i" 30 || die "$name: process $i did not exit"; done
}

pgaf_halt_all() {
  local name pid
  local -a halts=()
  # All at once. (Not a bare `wait`: it would also wait for the servers this shell started.)
  for name in monitor "${PGAF_NODES[@]}"; do pgaf_halt "$name" fast & halts+=($!); done
  for pid in "${halts[@]}"; do wait "$pid" || true; done
}

# Prints the name of the node that is primary in the monitor's view; false when none is.
pgaf_primary_name() {
  local n
  n=$(mon_sql "select primary_name from pgautofailover.get_primary()" 2>/dev/null) || return 1
  [[ -n "$n" ]] && echo "$n"
}

pgaf_fail() {  # a failed start: logs, stop what runs, exit
  local name
  echo "${0##*/}: $1" >&2
  for name in monitor "${PGAF_NODES[@]}"; do
    mapfile -t logs < <(pgaf_logs "$name")
    tail_logs "${logs[@]}"
  done
  pgaf_halt_all
  die "start-pgaf failed; logs are in $PGAF_HOME"
}

cmd_start_pgaf() {
  local t0 t1 pm p1 p2 data name port pid
  claim_dir "$1"
  t0=$(now_ms)
  # What an earlier start-pgaf left (also a start that was interrupted).
  if [[ -d "$PGAF_HOME" ]]; then pgaf_halt_all; fi
  rm -rf "$PGAF_HOME" "$DIR/pgaf.env"
  write_env

  PG_AUTOCTL=$(command -v pg_autoctl 2>/dev/null) || PG_AUTOCTL=
  if [[ -z "$PG_AUTOCTL" ]] || [[ ! -x "$PG15/postgres" ]] ||
    [[ ! -f "$("$PG15/pg_config" --sharedir 2>/dev/null)/extension/pgautofailover.control" ]]; then
    missing "pg_auto_failover for PostgreSQL 15" \
      "pg-auto-failover-cli postgresql-15-auto-failover postgresql-15"
    return 0
  fi
  command -v setpriv >/dev/null || die "setpriv is not installed (package util-linux)"

  mkdir -p "$PGAF_HOME" "$HA_HOME"
  ((EUID == 0)) && chown postgres:postgres "$PGAF_HOME" "$HA_HOME"
  autoctl_cmd
  pick_port pm stable; pick_port p1 stable; pick_port p2 stable
  PGAF_PORT_node1=$p1; PGAF_PORT_node2=$p2
  MON_URI="postgresql://autoctl_node@127.0.0.1:$pm/pg_auto_failover?sslmode=disable"

  # The monitor: an initialised data directory, then pg_autoctl makes it a monitor.
  data=$PGAF_HOME/monitor
  pgaf_initdb "$data" || pgaf_fail "initdb failed"
  pgaf_conf "$data" <<EOF
# Failure detection in about 3 s instead of 20 s, and no 30 s wait for an unreachable primary to
# demote itself (the defaults: 5000, 5000, 2, 2000, 20000, 30000).
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 3000
pgautofailover.primary_demote_timeout = 3000
EOF
  ((EUID == 0)) && chown -R postgres:postgres "$data"
  # In the background like the servers, so that `stop` finds it if this script is interrupted.
  pgaf_spawn monitor create monitor --pgdata "$data" --pgport "$pm" --hostname 127.0.0.1 \
    --auth trust --no-ssl
  pid=$(pgaf_keeper monitor)
  wait_exit "$pid" 120 || pgaf_fail "pg_autoctl create monitor did not finish within 120 s"
  wait "$pid" || pgaf_fail "pg_autoctl create monitor failed"
  # Else it listens on every address ('*').
  "${AUTOCTL[@]}" config set --pgdata "$data" postgresql.listen_addresses 127.0.0.1 \
    </dev/null >>"$PGAF_HOME/monitor.log" 2>&1 || pgaf_fail "pg_autoctl config set failed"
  pgaf_spawn monitor run --pgdata "$data"
  wait_for 60 mon_sql 'select 1' || pgaf_fail "the monitor did not accept connections within 60 s"
  echo "monitor: ready after $(secs $(($(now_ms) - t0))) s"

  # node1 on an initialised data directory: it registers first and so becomes the primary.
  t1=$(now_ms)
  data=$PGAF_HOME/node1
  pgaf_initdb "$data" || pgaf_fail "initdb failed"
  pgaf_conf "$data" </dev/null
  ((EUID == 0)) && chown -R postgres:postgres "$data"
  pgaf_spawn node1 create postgres --pgdata "$data" --pgport "$p1" --listen 127.0.0.1 \
    --hostname 127.0.0.1 --name node1 --auth trust --no-ssl --monitor "$MON_URI" --run
  wait_states 120 'node1=single/single' || pgaf_fail "node1 did not start"
  # The runtime role and the database, while node1 is alone (nothing waits for a standby) and
  # before node2 copies it. As in test-servers.sh: default privileges in template1, which
  # sqllock_test and the databases tests create are copies of.
  PGCONNECT_TIMEOUT=5 "$PG15/psql" "postgresql://postgres@127.0.0.1:$p1/template1" -Xq -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE $RUNTIME_ROLE LOGIN" \
    -c "ALTER DEFAULT PRIVILEGES FOR ROLE postgres GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO $RUNTIME_ROLE" \
    -c "ALTER DEFAULT PRIVILEGES FOR ROLE postgres GRANT USAGE ON SEQUENCES TO $RUNTIME_ROLE" \
    -c "CREATE DATABASE sqllock_test" -c "CHECKPOINT" >>"$PGAF_HOME/node1.log" 2>&1 ||
    pgaf_fail "creating sqllock_test failed"
  echo "node1: single after $(secs $(($(now_ms) - t1))) s"

  # node2 copies node1 (pg_basebackup) and becomes its synchronous standby.
  t1=$(now_ms)
  pgaf_spawn node2 create postgres --pgdata "$PGAF_HOME/node2" --pgport "$p2" --listen 127.0.0.1 \
    --hostname 127.0.0.1 --name node2 --auth trust --no-ssl --monitor "$MON_URI" --run
  wait_states 180 'node1=primary/primary node2=secondary/secondary' || pgaf_fail "node2 did not join"
  echo "node2: secondary after $(secs $(($(now_ms) - t1))) s"

  local hosts="127.0.0.1:$p1,127.0.0.1:$p2" params="target_session_attrs=read-write&sslmode=disable"
  PGAF_URI="postgresql://postgres@$hosts/sqllock_test?$params"
  cat >"$DIR/pgaf.env" <<EOF
SQLLOCK_TEST_PGAF_URI=$PGAF_URI
SQLLOCK_TEST_PGAF_RUNTIME_URI=postgresql://$RUNTIME_ROLE@$hosts/sqllock_test?$params
SQLLOCK_TEST_PGAF_MONITOR_URI=$MON_URI
SQLLOCK_TEST_PGAF_MONITOR_PORT=$pm
SQLLOCK_TEST_PGAF_NODE1_PORT=$p1
SQLLOCK_TEST_PGAF_NODE2_PORT=$p2
SQLLOCK_TEST_PGAF_MONITOR_DATA=$PGAF_HOME/monitor
SQLLOCK_TEST_PGAF_NODE1_DATA=$PGAF_HOME/node1
SQLLOCK_TEST_PGAF_NODE2_DATA=$PGAF_HOME/node2
SQLLOCK_TEST_PGAF_SOCKET_DIR=$PGAF_SOCK
SQLLOCK_TEST_PGAF_BIN=$PG15
SQLLOCK_TEST_PGAF_AUTOCTL=$PG_AUTOCTL
EOF
  write_env
  for name in node1 node2; do
    port=PGAF_PORT_$name
    echo "$name: port ${!port}, fsync $(PGCONNECT_TIMEOUT=5 "$PG15/psql" \
      "postgresql://postgres@127.0.0.1:${!port}/sqllock_test" -XAtqc 'show fsync' 2>&1)"
  done
  say "pg_auto_failover ready in $(secs $(($(now_ms) - t0))) s: $(pgaf_states); settings in $DIR/env"
}

cmd_pgaf_primary() {
  [[ -d "${1:-}" ]] || die "no directory '${1:-}'"
  set_dir "$1"; load_state || die "nothing of this script in $DIR"
  pgaf_load
  pgaf_primary_name || die "the monitor names no primary now ($(pgaf_states))"
}

cmd_pgaf_kill_primary() {
  local name
  [[ -d "${1:-}" ]] || die "no directory '${1:-}'"
  set_dir "$1"; load_state || die "nothing of this script in $DIR"
  pgaf_load
  name=$(pgaf_primary_name) || die "the monitor names no primary now ($(pgaf_states))"
  ours "$(pgaf_keeper "$name")" "$PGAF_HOME/$name" || ours "$(pgaf_postmaster "$name")" "$PGAF_HOME/$name" ||
    die "$name, the primary for the monitor, is not running"
  pgaf_halt "$name" kill
  echo "$name $KILLED_AT" >"$PGAF_HOME/killed"
  echo "$name"
}

cmd_pgaf_rejoin() {
  local name=${2:-} t0
  [[ -d "${1:-}" ]] || die "no directory '${1:-}'"
  [[ "$name" == node1 || "$name" == node2 ]] || die "pgaf-rejoin: NODE must be node1 or node2"
  set_dir "$1"; load_state || die "nothing of this script in $DIR"
  pgaf_load
  t0=$(now_ms)
  rm -f "$PGAF_HOME/killed"  # pgaf-wait-primary reports the time since the last kill
  if ours "$(pgaf_keeper "$name")" "$PGAF_HOME/$name"; then
    say "$name's keeper is running"
  else
    pgaf_run "$name"
  fi
  if ! wait_states 120 "$name=secondary/secondary" || ! wait_for 60 pgaf_stable; then
    mapfile -t logs < <(pgaf_logs "$name")
    tail_logs "${logs[@]}"
    die "$name did not become a secondary within 180 s ($(pgaf_states))"
  fi
  say "$name is a secondary again after $(secs $(($(now_ms) - t0))) s: $(pgaf_states)"
}

# A write that commits: txid_current() takes a transaction ID, so the commit waits for the
# synchronous standby, if the primary has one. Prints the server's port.
pgaf_write() {
  timeout 5 env PGCONNECT_TIMEOUT=2 "$PG15/psql" "$PGAF_URI" -XAtq -v ON_ERROR_STOP=1 \
    -c 'select txid_current()' -c 'select inet_server_port()' 2>/dev/null | tail -n 1
}

cmd_pgaf_wait_primary() {
  local limit=${2:-} t0 port name killed at
  [[ -d "${1:-}" ]] || die "no directory '${1:-}'"
  [[ "$limit" =~ ^[0-9]+$ ]] || die "pgaf-wait-primary: SECONDS must be a whole number"
  set_dir "$1"; load_state || die "nothing of this script in $DIR"
  pgaf_load
  t0=$(now_ms)
  while :; do
    port=$(pgaf_write) || port=
    [[ "$port" =~ ^[0-9]+$ ]] && break
    if (($(now_ms) - t0 >= limit * 1000)); then
      die "no primary accepted a write within $limit s ($(pgaf_states))"
    fi
    sleep 0.05
  done
  name=unknown
  [[ "$port" == "$PGAF_PORT_node1" ]] && name=node1
  [[ "$port" == "$PGAF_PORT_node2" ]] && name=node2
  read -r killed at 2>/dev/null <"$PGAF_HOME/killed" || killed=
  if [[ -n "$killed" ]]; then
    echo "${0##*/}: $name accepts writes $(secs $(($(now_ms) - at))) s after $killed was killed" \
      "(waited $(secs $(($(now_ms) - t0))) s)" >&2
  else
    echo "${0##*/}: $name accepts writes (waited $(secs $(($(now_ms) - t0))) s)" >&2
  fi
  echo "$name"
}

pgaf_status() {
  local name keeper port
  [[ -f "$DIR/pgaf.env" ]] || return 0
  pgaf_load
  for name in monitor "${PGAF_NODES[@]}"; do
    keeper=$(pgaf_keeper "$name")
    port=PGAF_PORT_$name
    if ours "$keeper" "$PGAF_HOME/$name"; then
      say "pg_auto_failover $name: running (keeper pid $keeper," \
        "postmaster pid $(pgaf_postmaster "$name"), port ${!port})"
    else
      say "pg_auto_failover $name: stopped"
    fi
  done
  say "pg_auto_failover states: $(pgaf_states)"
}

# ---------------------------------------------------------------- Galera ----------------------
GALERA_PROVIDER=/usr/lib/galera/libgalera_smm.so

galera_node_paths() {  # N: the paths of node N
  G_HOME=$GALERA_HOME/n$1
  G_CNF=$G_HOME/my.cnf; G_DATA=$G_HOME/data; G_LOG=$G_HOME/error.log; G_PIDFILE=$G_HOME/mysqld.pid
}
galera_programs() {  # false when one is missing
  MARIADBD=$(my_prog mariadbd) && MARIADB_ADMIN=$(my_prog mariadb-admin) &&
    MARIADB=$(my_prog mariadb) && MARIADB_INSTALL_DB=$(my_prog mariadb-install-db) &&
    [[ -f "$GALERA_PROVIDER" ]] && command -v rsync >/dev/null && command -v ss >/dev/null
}

# $1: node, $2: mysql port, $3 gcomm port, $4 IST port, $5 SST port, $6 gcomm ports of all nodes.
galera_write_conf() {
  local os_user
  os_user=$(id -un)
  galera_node_paths "$1"
  mkdir -p "$G_HOME/tmp"
  cat >"$G_CNF" <<EOF
# Written by scripts/ha-servers.sh; used with --defaults-file by the server and the clients.
[mysqld]
$( ((EUID == 0)) && echo "user = mysql")
datadir = $G_DATA
tmpdir = $G_HOME/tmp
socket = $G_HOME/mysqld.sock
port = $2
bind-address = 127.0.0.1
pid-file = $G_PIDFILE
log-error = $G_LOG
$(my_common_conf)
# Galera: row-based replication, InnoDB only, interleaved auto-increment locks.
binlog-format = ROW
default-storage-engine = InnoDB
innodb-autoinc-lock-mode = 2
wsrep-on = ON
wsrep-provider = $GALERA_PROVIDER
wsrep-cluster-name = sqllock-test-${BASE##*/}
wsrep-cluster-address = gcomm://$6
wsrep-node-name = n$1
# With its port: without one every node would also claim the default gcomm port 4567.
wsrep-node-address = 127.0.0.1:$3
wsrep-provider-options = "gmcast.listen_addr=tcp://127.0.0.1:$3;ist.recv_addr=127.0.0.1:$4;gcache.size=64M"
wsrep-sst-method = rsync
wsrep-sst-receive-address = 127.0.0.1:$5
[client]
socket = $G_HOME/mysqld.sock
# The administrator: root@localhost authenticates by the Unix socket owner (unix_socket plugin).
user = $os_user
EOF
}

galera_pid() { galera_node_paths "$1"; cat "$G_HOME/pgid" 2>/dev/null || true; }
galera_running() { galera_node_paths "$1"; ours "$(galera_pid "$1")" "$G_CNF"; }

galera_launch() {  # N [--wsrep-new-cluster]
  local n=$1
  shift
  galera_node_paths "$n"
  rm -f "$G_PIDFILE"
  setsid "$MARIADBD" --defaults-file="$G_CNF" "$@" </dev/null >>"$G_HOME/mariadbd.out" 2>&1 &
  echo "$!" >"$G_HOME/pgid"
}

# After a crash (grastate.dat says seqno -1) a node does not know which writes it has, and would
# ask for a full state transfer. As the packaged service does (galera_recovery), find its
# position with --wsrep-recover and pass it as --wsrep-start-position: the donor then sends
# only the missing writes (IST). Prints the option, or nothing.
galera_start_position() {
  local pos
  galera_node_paths "$1"
  grep -q '^seqno: *-1' "$G_DATA/grastate.dat" 2>/dev/null || return 0
  : >"$G_HOME/recover.log"
  ((EUID == 0)) && chown mysql:mysql "$G_HOME/recover.log"
  timeout 120 "$MARIADBD" --defaults-file="$G_CNF" --wsrep-recover --log-error="$G_HOME/recover.log" \
    </dev/null >>"$G_HOME/mariadbd.out" 2>&1 || { tail_logs "$G_HOME/recover.log"; return 0; }
  pos=$(sed -n 's/.*WSREP: Recovered position: *\([^ ]*:[-0-9]*\).*/\1/p' "$G_HOME/recover.log" | tail -n 1)
  [[ -n "$pos" ]] && echo "--wsrep-start-position=$pos"
}

galera_sql() {  # N SQL: as the administrator, by the node's socket
  galera_node_paths "$1"
  "$MARIADB" --defaults-file="$G_CNF" --connect-timeout=3 -NBe "$2"
}
galera_status_of() { galera_sql "$1" "SHOW STATUS LIKE '$2'" 2>/dev/null | cut -f 2; }
galera_synced() {  # N [CLUSTER_SIZE]
  [[ "$(galera_status_of "$1" wsrep_local_state_comment)" == Synced ]] &&
    { [[ -z "${2:-}" ]] || [[ "$(galera_status_of "$1" wsrep_cluster_size)" == "$2" ]]; }
}

# Waits up to $2 seconds until node $1 is Synced (in a cluster of $3 nodes, when given).
galera_wait_synced() {
  local n=$1 limit=$2 t0
  t0=$(now_ms)
  while (($(now_ms) - t0 < limit * 1000)); do
    galera_synced "$n" "${3:-}" && return 0
    if ! galera_running "$n"; then
      echo "node $n exited" >&2
      galera_node_paths "$n"
      tail_logs "$G_LOG" "$G_HOME/mariadbd.out"
      return 1
    fi
    sleep 0.2
  done
  echo "node $n was not Synced${3:+ in a cluster of $3} within $limit s" \
    "(state: $(galera_status_of "$n" wsrep_local_state_comment)," \
    "cluster size: $(galera_status_of "$n" wsrep_cluster_size))" >&2
  galera_node_paths "$n"
  tail_logs "$G_LOG" "$G_HOME/mariadbd.out"
  return 1
}

# Stops node $1: $2 = fast (SIGTERM: a clean shutdown, leaving the cluster; SIGKILL after 30 s)
# or kill (SIGKILL at once: a crash). The node's process group holds mariadbd and the state
# transfer scripts it runs.
galera_halt() {
  local pid
  galera_node_paths "$1"
  pid=$(galera_pid "$1")
  if [[ "$2" == fast ]]; then
    stop_group "$pid" "$G_CNF" 30 || die "Galera node $1 (pid $pid) did not exit"
  else
    stop_group "$pid" "$G_CNF" 0 || die "Galera node $1 (pid $pid) did not exit"
  fi
}

galera_halt_all() {
  local n pid
  local -a halts=()
  for n in 1 2 3; do galera_halt "$n" fast & halts+=($!); done
  for pid in "${halts[@]}"; do wait "$pid" || true; done
}

galera_fail() {
  local n
  echo "${0##*/}: $1" >&2
  for n in 1 2 3; do galera_node_paths "$n"; tail_logs "$G_LOG"; done
  galera_halt_all
  die "start-galera failed; logs are in $GALERA_HOME"
}

cmd_start_galera() {
  local t0 t1 n tpl password runtime_password gcomm waiters=() rc=0
  local -a P G I S
  claim_dir "$1"
  t0=$(now_ms)
  if [[ -d "$GALERA_HOME" ]]; then galera_halt_all; fi
  rm -rf "$GALERA_HOME" "$DIR/galera.env"
  write_env
  if ! galera_programs; then
    missing "MariaDB Galera" "galera-4 mariadb-server mariadb-client rsync iproute2"
    return 0
  fi

  for n in 1 2 3; do
    pick_port "P[$n]" stable; pick_port "G[$n]" stable; pick_port "I[$n]" stable; pick_port "S[$n]" stable
  done
  gcomm="127.0.0.1:${G[1]},127.0.0.1:${G[2]},127.0.0.1:${G[3]}"
  for n in 1 2 3; do galera_write_conf "$n" "${P[$n]}" "${G[$n]}" "${I[$n]}" "${S[$n]}" "$gcomm"; done

  # Node 1: an initialised data directory (test-servers.sh's template when there is one: the
  # same server and initialisation), started as a new cluster.
  galera_node_paths 1
  # The server runs as mysql (user = mysql in my.cnf), also mariadb-install-db's bootstrap: it
  # must be able to write the node's directories (tmpdir) before anything runs.
  ((EUID == 0)) && chown -R mysql:mysql "$GALERA_HOME"
  tpl=$(template_dir my "$MARIADBD $("$MARIADBD" --version)") || tpl=
  if ! [[ -n "$tpl" && -f "$tpl/complete" ]] || ! cp -a "$tpl/data" "$G_DATA"; then
    rm -rf "$G_DATA"
    "$MARIADB_INSTALL_DB" --defaults-file="$G_CNF" --auth-root-authentication-method=socket \
      --skip-test-db >"$G_HOME/install.log" 2>&1 ||
      { tail_logs "$G_HOME/install.log"; galera_fail "mariadb-install-db failed"; }
  fi
  for n in 2 3; do galera_node_paths "$n"; mkdir -p "$G_DATA"; done
  ((EUID == 0)) && chown -R mysql:mysql "$GALERA_HOME"
  galera_node_paths 1
  galera_launch 1 --wsrep-new-cluster
  wait_for 60 "$MARIADB_ADMIN" --defaults-file="$G_CNF" --connect-timeout=2 ping ||
    galera_fail "node 1 did not accept connections within 60 s"
  galera_wait_synced 1 60 || galera_fail "node 1 did not start"
  # The users of test-servers.sh (the owner with ALL on *.*, the runtime user with row rights on
  # sqllock_* databases); Galera replicates them, and the joiners copy them anyway.
  password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  runtime_password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  galera_sql 1 "$(my_users_sql "$password" "$runtime_password")" ||
    galera_fail "creating the users and sqllock_test failed"
  echo "node 1: Synced after $(secs $(($(now_ms) - t0))) s"

  # Nodes 2 and 3 join at once (empty data directories: a full state transfer by rsync each;
  # the donor serves one at a time, the other joiner retries until it can).
  t1=$(now_ms)
  for n in 2 3; do galera_launch "$n"; done
  for n in 2 3; do galera_wait_synced "$n" 180 >"$GALERA_HOME/wait-$n.log" 2>&1 & waiters+=($!); done
  for n in "${waiters[@]}"; do wait "$n" || rc=1; done
  if ((rc)); then cat "$GALERA_HOME"/wait-*.log >&2; galera_fail "nodes 2 and 3 did not join"; fi
  for n in 1 2 3; do
    galera_wait_synced "$n" 60 3 || galera_fail "the cluster did not reach 3 Synced nodes"
  done
  echo "nodes 2 and 3: Synced after $(secs $(($(now_ms) - t1))) s"

  {
    for n in 1 2 3; do
      echo "SQLLOCK_TEST_GALERA_URI_$n=mysql://sqllock:$password@127.0.0.1:${P[$n]}/sqllock_test"
      echo "SQLLOCK_TEST_GALERA_RUNTIME_URI_$n=mysql://$RUNTIME_ROLE:$runtime_password@127.0.0.1:${P[$n]}/sqllock_test"
    done
    for n in 1 2 3; do
      galera_node_paths "$n"
      echo "SQLLOCK_TEST_GALERA_PORT_$n=${P[$n]}"
      echo "SQLLOCK_TEST_GALERA_CNF_$n=$G_CNF"
      echo "SQLLOCK_TEST_GALERA_LOG_$n=$G_LOG"
    done
    echo "SQLLOCK_TEST_GALERA_USER=sqllock"
    echo "SQLLOCK_TEST_GALERA_PASSWORD=$password"
  } >"$DIR/galera.env"
  write_env
  say "Galera ready in $(secs $(($(now_ms) - t0))) s: 3 nodes Synced on 127.0.0.1:${P[1]}, ${P[2]}," \
    "${P[3]}; settings in $DIR/env"
}

galera_load() {
  [[ -f "$DIR/galera.env" ]] || die "no Galera cluster in $DIR (run start-galera first)"
  galera_programs ||
    die "MariaDB Galera is not installed (packages: galera-4 mariadb-server mariadb-client rsync iproute2)"
}

galera_node_arg() {
  [[ "${1:-}" =~ ^[123]$ ]] || die "N must be 1, 2 or 3"
}

cmd_galera_kill() {
  [[ -d "${1:-}" ]] || die "no directory '${1:-}'"
  galera_node_arg "${2:-}"
  set_dir "$1"; load_state || die "nothing of this script in $DIR"
  galera_load
  galera_running "$2" || die "Galera node $2 is not running"
  galera_halt "$2" kill
  say "killed Galera node $2"
}

cmd_galera_start() {
  local n=${2:-} t0 other=0 m position
  [[ -d "${1:-}" ]] || die "no directory '${1:-}'"
  galera_node_arg "$n"
  set_dir "$1"; load_state || die "nothing of this script in $DIR"
  galera_load
  t0=$(now_ms)
  if galera_running "$n"; then
    say "Galera node $n is running"
  else
    for m in 1 2 3; do [[ "$m" != "$n" ]] && galera_running "$m" && other=1; done
    ((other)) || die "no other Galera node is running for node $n to join (use stop and start-galera)"
    position=$(galera_start_position "$n")
    # shellcheck disable=SC2086  # no option or one
    galera_launch "$n" $position
  fi
  galera_wait_synced "$n" 180 || die "Galera node $n did not rejoin"
  say "Galera node $n Synced after $(secs $(($(now_ms) - t0))) s" \
    "(cluster size $(galera_status_of "$n" wsrep_cluster_size))"
}

galera_status() {
  local n
  [[ -f "$DIR/galera.env" ]] || return 0
  galera_programs || return 0
  for n in 1 2 3; do
    if galera_running "$n"; then
      say "Galera node $n: running (pid $(galera_pid "$n")," \
        "port $(env_value "$DIR/galera.env" "SQLLOCK_TEST_GALERA_PORT_$n")," \
        "$(galera_status_of "$n" wsrep_local_state_comment)," \
        "cluster size $(galera_status_of "$n" wsrep_cluster_size))"
    else
      say "Galera node $n: stopped"
    fi
  done
}

# ---------------------------------------------------------------- commands --------------------
cmd_stop() {
  [[ -n "${1:-}" ]] || die "missing DIR"
  [[ -d "$1" ]] || { say "nothing to stop in $1"; return 0; }
  DIR=$(cd "$1" && pwd -P)
  [[ -f "$DIR/$marker" ]] || die "$DIR was not made by this script; not touching it"
  if load_state; then
    # By the pid files: also what an interrupted start left.
    if [[ -d "$PGAF_HOME" ]]; then pgaf_halt_all & fi
    if [[ -d "$GALERA_HOME" ]]; then galera_halt_all & fi
    wait
    [[ "$BASE" != "$DIR" && "$BASE" == /tmp/sqllock-ha.* ]] && rm -rf "$BASE"
  fi
  find "$DIR" -mindepth 1 -delete
  rmdir "$DIR" 2>/dev/null || true
  say "stopped; removed $DIR"
}

cmd_status() {
  [[ -d "${1:-}" ]] || die "no directory '${1:-}'"
  set_dir "$1"
  load_state || { say "nothing of this script in $DIR"; return 1; }
  [[ -f "$DIR/pgaf.env" || -f "$DIR/galera.env" ]] || { say "nothing running in $DIR"; return 0; }
  pgaf_status
  galera_status
}

case "${1:-}" in
  start-pgaf) cmd_start_pgaf "${2:-}" ;;
  start-galera) cmd_start_galera "${2:-}" ;;
  stop) cmd_stop "${2:-}" ;;
  status) cmd_status "${2:-}" ;;
  pgaf-primary) cmd_pgaf_primary "${2:-}" ;;
  pgaf-kill-primary) cmd_pgaf_kill_primary "${2:-}" ;;
  pgaf-rejoin) cmd_pgaf_rejoin "${2:-}" "${3:-}" ;;
  pgaf-wait-primary) cmd_pgaf_wait_primary "${2:-}" "${3:-}" ;;
  galera-kill) cmd_galera_kill "${2:-}" "${3:-}" ;;
  galera-start) cmd_galera_start "${2:-}" "${3:-}" ;;
  *) sed -n '2,67p' "$0" >&2; exit 2 ;;
esac
