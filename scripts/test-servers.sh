#!/usr/bin/env bash
# Private PostgreSQL 15 and MariaDB 10.11 servers for the tests, in a directory of their own,
# and PgBouncer in front of that PostgreSQL.
#
#   test-servers.sh start DIR     start them (removing leftovers of an earlier run in DIR first)
#   test-servers.sh stop DIR      stop what `start` started and remove DIR
#   test-servers.sh status DIR    print which servers are running
#   test-servers.sh {start,stop,restart,kill}-{pg,my,pgbouncer} DIR
#                                 fault injection for tests: stop / start / restart one server on
#                                 the same port and data directory; kill = SIGKILL (a crash)
#
# `start` listens on 127.0.0.1 only, on free random ports, with Unix sockets inside DIR, creates
# the database sqllock_test on both servers plus a MariaDB user for TCP, and writes DIR/env:
# KEY=VALUE lines, the URIs tests connect to (SQLLOCK_TEST_PG_URI, SQLLOCK_TEST_MYSQL_URI) and
# what a fault test needs to act on a server (SQLLOCK_TEST_SERVERS_SCRIPT, SQLLOCK_TEST_STATE_DIR,
# data directories, ports, pid files, logs). Those URIs are the owner's (all rights); each server
# also gets a role sqllock_runtime that may only read and write rows (and, on MariaDB, EXECUTE the
# SQL guard function), the least privilege sqllock's locks need, and
# SQLLOCK_TEST_{PG,MYSQL}_RUNTIME_URI connect as it. A server whose SQLLOCK_TEST_*_URI is already
# set in the environment (e.g. one from docker-compose.yml) is not started; its URI, and its
# runtime URI when one is set, are copied to DIR/env.
#
# PgBouncer 1.18 (when installed) runs after PostgreSQL is ready, as user postgres, in
# transaction pooling mode with a pool of 2 server connections per database and user (so clients
# share server connections, as behind a production pooler), trust authentication for postgres and
# sqllock_runtime, the database sqllock_test plus a wildcard entry for the databases tests create,
# and an admin console (database pgbouncer, user postgres), retrying a failed server login after
# 1 s (server_login_retry; the default 15 s outlasts a restart test). DIR/env gets
# SQLLOCK_TEST_PGBOUNCER_URI (as sqllock_runtime), SQLLOCK_TEST_PGBOUNCER_OWNER_URI (as postgres),
# SQLLOCK_TEST_PGBOUNCER_PORT, _PIDFILE, _INI and _LOG. It is not started when PostgreSQL comes from
# the environment, or when SQLLOCK_TEST_PGBOUNCER_URI is set (that URI, and
# SQLLOCK_TEST_PGBOUNCER_OWNER_URI when set, are copied to DIR/env).
#
# When a server's programs are missing, `start` fails if servers are required (CI or
# SQLLOCK_TEST_REQUIRE_SERVERS set, as in tests/support/test_env.hpp) and otherwise warns and
# leaves that URI out, so its tests skip (PgBouncer too). Run as root (PostgreSQL and PgBouncer
# then run as user postgres) or as an ordinary user. SQLLOCK_TEST_KEEP_LOGS=1 makes `stop` keep
# DIR/*/*.log.
set -euo pipefail

script=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/$(basename "${BASH_SOURCE[0]}")
marker=.sqllock-test-servers  # in DIR: this script made DIR, so it may delete it
RUNTIME_ROLE=sqllock_runtime  # the least-privilege role lock operations run as (see `start`)

# shellcheck source=lib/required.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/required.sh"
# die, say, now_ms, secs, alive, ours, wait_exit, children_of, free_port, tail_logs, as_pg,
# my_prog, template_dir, save_template
# shellcheck source=lib/proc.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/proc.sh"

# ---------------------------------------------------------------- PostgreSQL ------------------
pg_bin() {
  local d dirs=(/usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin)
  [[ -n "${SQLLOCK_TEST_PG_BIN:-}" ]] && dirs=("$SQLLOCK_TEST_PG_BIN")
  for d in "${dirs[@]}"; do
    [[ -x "$d/initdb" && -x "$d/pg_ctl" && -x "$d/psql" ]] && { echo "$d"; return; }
  done
  return 1
}
pg_pid() { head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null || true; }

pg_write_conf() {
  cat >"$PG_DATA/sqllock.conf" <<EOF
# Written by scripts/test-servers.sh.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_SOCKET_DIR'
# Test data: fsync off survives a server crash (the kernel keeps the writes), not a machine crash.
fsync = off
max_connections = 200
EOF
}

pg_launch() {
  # After a kill the dead postmaster may linger as a zombie, which PostgreSQL would take for a
  # running server holding its lock files.
  if ! alive "$(pg_pid)"; then rm -f "$PG_DATA/postmaster.pid" "$PG_SOCKET_DIR"/.s.PGSQL.*.lock; fi
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t 60 -s start >>"$PG_HOME/pg_ctl.log" 2>&1
}

# $1: fast (clean stop: a shutdown checkpoint), immediate (no checkpoint: the data is about to be
# removed; the server still ends its processes and frees its shared memory) or kill (SIGKILL to
# every server process: a crash).
pg_halt() {
  local pid
  pid=$(pg_pid)
  ours "$pid" "$PG_DATA" || return 0
  if [[ "$1" == fast || "$1" == immediate ]]; then
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m "$1" -w -t 30 -s stop >>"$PG_HOME/pg_ctl.log" 2>&1 || true
  fi
  if alive "$pid"; then
    # Every server process is a child of the postmaster (each in a session of its own). Killing
    # them all at once is a crash; a restart then recovers from the WAL.
    local child children
    mapfile -t children < <(children_of "$pid")
    kill -KILL "$pid" "${children[@]}" 2>/dev/null || true
    for child in "${children[@]}"; do wait_exit "$child" 30 || true; done
  fi
  wait_exit "$pid" 30 || die "PostgreSQL (pid $pid) did not exit"
}

# Creates and starts the server. Runs in the background during `start`; output goes to a log.
pg_setup() {
  local attempt t0 tpl
  t0=$(now_ms)
  mkdir -p "$PG_HOME"
  ((EUID == 0)) && chown postgres:postgres "$PG_HOME"
  tpl=$(template_dir pg "$PG_BIN $("$PG_BIN/postgres" --version)") || tpl=
  if [[ -n "$tpl" && -f "$tpl/complete" ]] && cp -a "$tpl/data" "$PG_DATA"; then
    echo "PostgreSQL: data directory copied from $tpl in $(secs $(($(now_ms) - t0))) s"
  else
    rm -rf "$PG_DATA"
    as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
      >"$PG_HOME/initdb.log" 2>&1 || { tail_logs "$PG_HOME/initdb.log"; return 1; }
    echo "include 'sqllock.conf'" >>"$PG_DATA/postgresql.conf"
    echo "PostgreSQL: initdb $(secs $(($(now_ms) - t0))) s"
    if [[ -n "$tpl" ]]; then save_template "$tpl" "$PG_DATA"; fi
  fi
  # Another program may take the chosen port before the server binds it: try a new one.
  for attempt in 1 2 3; do
    ((attempt == 1)) || PG_PORT=$(free_port)
    pg_write_conf
    pg_launch && break
    ((attempt < 3)) || { tail_logs "$PG_HOME/pg_ctl.log" "$PG_LOG"; return 1; }
  done
  # The runtime role (docs/operations.md, "Least privilege"): it may read and write every table
  # and use every sequence postgres creates later, and nothing else. Default privileges live in
  # each database, so they are set in template1 first: sqllock_test and the databases tests
  # create later are copies of it. CONNECT on databases and USAGE on schema public come from
  # PUBLIC.
  "$PG_BIN/psql" -h "$PG_SOCKET_DIR" -p "$PG_PORT" -U postgres -d template1 -Xq -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE $RUNTIME_ROLE LOGIN" \
    -c "ALTER DEFAULT PRIVILEGES FOR ROLE postgres GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO $RUNTIME_ROLE" \
    -c "ALTER DEFAULT PRIVILEGES FOR ROLE postgres GRANT USAGE ON SEQUENCES TO $RUNTIME_ROLE" \
    -c "CREATE DATABASE sqllock_test" || { tail_logs "$PG_LOG"; return 1; }
  echo "PostgreSQL: ready after $(secs $(($(now_ms) - t0))) s"
  cat >"$DIR/pg.env" <<EOF
SQLLOCK_TEST_PG_URI=postgresql://postgres@127.0.0.1:$PG_PORT/sqllock_test
SQLLOCK_TEST_PG_RUNTIME_URI=postgresql://$RUNTIME_ROLE@127.0.0.1:$PG_PORT/sqllock_test
SQLLOCK_TEST_PG_BIN=$PG_BIN
SQLLOCK_TEST_PG_PORT=$PG_PORT
SQLLOCK_TEST_PG_DATA=$PG_DATA
SQLLOCK_TEST_PG_SOCKET_DIR=$PG_SOCKET_DIR
SQLLOCK_TEST_PG_PIDFILE=$PG_DATA/postmaster.pid
SQLLOCK_TEST_PG_LOG=$PG_LOG
EOF
  if [[ -n "$PGBOUNCER" ]]; then pgb_setup; fi
}

# ---------------------------------------------------------------- PgBouncer -------------------
pgb_prog() { command -v pgbouncer 2>/dev/null || { [[ -x /usr/sbin/pgbouncer ]] && echo /usr/sbin/pgbouncer; }; }
pgb_pid() { cat "$PGB_PIDFILE" 2>/dev/null || true; }

pgb_write_conf() {
  # trust still needs the users in auth_file. psql sends application_name and client_encoding,
  # which PgBouncer tracks itself; drivers such as JDBC and npgsql send extra_float_digits or
  # options, which it would otherwise refuse. The wildcard entry serves any other database
  # (named as the client asks) with the same pool settings.
  printf '"postgres" ""\n"%s" ""\n' "$RUNTIME_ROLE" >"$PGB_USERS"
  cat >"$PGB_INI" <<EOF
; Written by scripts/test-servers.sh.
[databases]
sqllock_test = host=127.0.0.1 port=$PG_PORT dbname=sqllock_test
* = host=127.0.0.1 port=$PG_PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = trust
auth_file = $PGB_USERS
pool_mode = transaction
default_pool_size = 2
max_client_conn = 200
ignore_startup_parameters = extra_float_digits,options
admin_users = postgres
; Tests restart PostgreSQL behind it: after a failed server login (one during the restart) the
; default 15 s would refuse every client for 15 s ("server login has been failing").
server_login_retry = 1
EOF
}

# Runs PgBouncer in the foreground of a session of its own (it logs to stderr, into PGB_LOG) and
# waits until a query through it reaches PostgreSQL.
pgb_launch() {
  local pid t0
  rm -f "$PGB_PIDFILE"
  # setpriv, not runuser: it execs, so $! is PgBouncer itself. PgBouncer refuses to run as root.
  if ((EUID == 0)); then
    setsid setpriv --reuid=postgres --regid=postgres --init-groups "$PGBOUNCER" "$PGB_INI" \
      </dev/null >>"$PGB_LOG" 2>&1 &
  else
    setsid "$PGBOUNCER" "$PGB_INI" </dev/null >>"$PGB_LOG" 2>&1 &
  fi
  pid=$!
  echo "$pid" >"$PGB_PIDFILE"
  t0=$(now_ms)
  while (($(now_ms) - t0 < 30000)); do
    alive "$pid" || return 1
    PGCONNECT_TIMEOUT=2 "$PG_BIN/psql" "postgresql://postgres@127.0.0.1:$PGB_PORT/sqllock_test" \
      -Xqtc 'select 1' >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
  return 1
}

pgb_halt() {  # $1: fast (SIGTERM: immediate shutdown) or kill (SIGKILL: a crash)
  halt_process "$(pgb_pid)" "$PGB_INI" "$1" PgBouncer
}

# Starts PgBouncer in front of the running PostgreSQL (the end of pg_setup).
pgb_setup() {
  local attempt t0
  t0=$(now_ms)
  mkdir -p "$PGB_HOME"
  for attempt in 1 2 3; do
    ((attempt == 1)) || PGB_PORT=$(free_port)
    pgb_write_conf
    pgb_launch && break
    ((attempt < 3)) || { tail_logs "$PGB_LOG"; return 1; }
  done
  echo "PgBouncer: ready after $(secs $(($(now_ms) - t0))) s"
  cat >"$DIR/pgb.env" <<EOF
SQLLOCK_TEST_PGBOUNCER_URI=postgresql://$RUNTIME_ROLE@127.0.0.1:$PGB_PORT/sqllock_test
SQLLOCK_TEST_PGBOUNCER_OWNER_URI=postgresql://postgres@127.0.0.1:$PGB_PORT/sqllock_test
SQLLOCK_TEST_PGBOUNCER_PORT=$PGB_PORT
SQLLOCK_TEST_PGBOUNCER_PIDFILE=$PGB_PIDFILE
SQLLOCK_TEST_PGBOUNCER_INI=$PGB_INI
SQLLOCK_TEST_PGBOUNCER_LOG=$PGB_LOG
EOF
}

# ---------------------------------------------------------------- MariaDB ---------------------
my_pid() { cat "$MY_PIDFILE" 2>/dev/null || true; }

my_write_conf() {
  local os_user
  os_user=$(id -un)
  cat >"$MY_CNF" <<EOF
# Written by scripts/test-servers.sh; used with --defaults-file by the server and the clients.
[mysqld]
$( ((EUID == 0)) && echo "user = root")
datadir = $MY_DATA
socket = $MY_SOCKET
port = $MY_PORT
bind-address = 127.0.0.1
pid-file = $MY_PIDFILE
log-error = $MY_LOG
$(my_common_conf)
[client]
socket = $MY_SOCKET
# The administrator: root@localhost authenticates by the Unix socket owner (unix_socket plugin).
user = $os_user
EOF
}

my_launch() {
  local pid t
  rm -f "$MY_PIDFILE"
  # setsid: its own session, so signals meant for the caller (a ctest time-out) do not reach it.
  setsid "$MARIADBD" --defaults-file="$MY_CNF" </dev/null >>"$MY_HOME/mariadbd.out" 2>&1 &
  pid=$!
  for ((t = 0; t < 3000; t++)); do  # up to 60 s
    alive "$pid" || return 1
    "$MARIADB_ADMIN" --defaults-file="$MY_CNF" --connect-timeout=2 ping >/dev/null 2>&1 && return 0
    sleep 0.02
  done
  kill -KILL "$pid" 2>/dev/null || true
  return 1
}

my_halt() {  # $1: fast (clean shutdown) or kill (SIGKILL: a crash)
  halt_process "$(my_pid)" "$MY_CNF" "$1" MariaDB
}

my_setup() {
  local attempt password runtime_password t0 tpl
  t0=$(now_ms)
  mkdir -p "$MY_HOME"
  my_write_conf
  tpl=$(template_dir my "$MARIADBD $("$MARIADBD" --version)") || tpl=
  if [[ -n "$tpl" && -f "$tpl/complete" ]] && cp -a "$tpl/data" "$MY_DATA"; then
    echo "MariaDB: data directory copied from $tpl in $(secs $(($(now_ms) - t0))) s"
  else
    rm -rf "$MY_DATA"
    "$MARIADB_INSTALL_DB" --defaults-file="$MY_CNF" --auth-root-authentication-method=socket \
      --skip-test-db >"$MY_HOME/install.log" 2>&1 || { tail_logs "$MY_HOME/install.log"; return 1; }
    echo "MariaDB: install-db $(secs $(($(now_ms) - t0))) s"
    if [[ -n "$tpl" ]]; then save_template "$tpl" "$MY_DATA"; fi
  fi
  for attempt in 1 2 3; do
    if ((attempt > 1)); then MY_PORT=$(free_port); my_write_conf; fi
    my_launch && break
    ((attempt < 3)) || { tail_logs "$MY_HOME/mariadbd.out" "$MY_LOG"; return 1; }
  done
  password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  runtime_password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  # The owner gets ALL on *.*: tests may create further databases and KILL other sessions (fault
  # tests). The runtime user (docs/operations.md, "Least privilege") may only read and write rows,
  # in sqllock_test and the sqllock_fresh_* databases tests create (`_` escaped: a literal one).
  # It also gets EXECUTE there: the SQL guard of schema 6 (<table>_guard) is a stored function
  # (docs/operations.md, "Least privilege").
  "$MARIADB" --defaults-file="$MY_CNF" -e "$(my_users_sql "$password" "$runtime_password")" ||
    { tail_logs "$MY_LOG"; return 1; }
  echo "MariaDB: ready after $(secs $(($(now_ms) - t0))) s"
  cat >"$DIR/my.env" <<EOF
SQLLOCK_TEST_MYSQL_URI=mysql://sqllock:$password@127.0.0.1:$MY_PORT/sqllock_test
SQLLOCK_TEST_MYSQL_RUNTIME_URI=mysql://$RUNTIME_ROLE:$runtime_password@127.0.0.1:$MY_PORT/sqllock_test
SQLLOCK_TEST_MY_PORT=$MY_PORT
SQLLOCK_TEST_MY_USER=sqllock
SQLLOCK_TEST_MY_PASSWORD=$password
SQLLOCK_TEST_MY_DATA=$MY_DATA
SQLLOCK_TEST_MY_SOCKET=$MY_SOCKET
SQLLOCK_TEST_MY_PIDFILE=$MY_PIDFILE
SQLLOCK_TEST_MY_CNF=$MY_CNF
SQLLOCK_TEST_MY_LOG=$MY_LOG
EOF
}

# ---------------------------------------------------------------- state -----------------------
# Sets DIR (absolute) from $1, creating it.
set_dir() {
  [[ -n "${1:-}" ]] || die "missing DIR"
  [[ "$1" != *[[:space:]]* ]] || die "DIR must not contain white space: '$1'"
  mkdir -p "$1"
  DIR=$(cd "$1" && pwd -P)
}

# Paths of both servers under BASE: DIR, or a directory in /tmp when DIR is too deep for a Unix
# socket path (108 bytes) or when the postgres user cannot reach DIR (e.g. under /root).
set_paths() {
  BASE=$1
  PG_HOME=$BASE/pg; PG_DATA=$PG_HOME/data; PG_SOCKET_DIR=$PG_HOME; PG_LOG=$PG_HOME/server.log
  MY_HOME=$BASE/my; MY_DATA=$MY_HOME/data; MY_SOCKET=$MY_HOME/mysqld.sock
  MY_PIDFILE=$MY_HOME/mysqld.pid; MY_LOG=$MY_HOME/error.log; MY_CNF=$MY_HOME/my.cnf
  PGB_HOME=$BASE/pgbouncer; PGB_INI=$PGB_HOME/pgbouncer.ini; PGB_USERS=$PGB_HOME/userlist.txt
  PGB_PIDFILE=$PGB_HOME/pgbouncer.pid; PGB_LOG=$PGB_HOME/pgbouncer.log
}

# Loads the paths of an existing DIR (written by `start`); false when DIR holds no servers.
load_state() {
  [[ -f "$DIR/$marker" && -f "$DIR/state" ]] || return 1
  # shellcheck disable=SC1091
  source "$DIR/state"
  set_paths "$BASE"
  PG_BIN=${STATE_PG_BIN:-}
  PGBOUNCER=${STATE_PGBOUNCER:-}
  MARIADBD=${STATE_MARIADBD:-}
  MARIADB_ADMIN=${STATE_MARIADB_ADMIN:-}
  PG_PORT=$(sed -n 's/^SQLLOCK_TEST_PG_PORT=//p' "$DIR/pg.env" 2>/dev/null || true)
  MY_PORT=$(sed -n 's/^SQLLOCK_TEST_MY_PORT=//p' "$DIR/my.env" 2>/dev/null || true)
  PGB_PORT=$(sed -n 's/^SQLLOCK_TEST_PGBOUNCER_PORT=//p' "$DIR/pgb.env" 2>/dev/null || true)
}

# timed TEXT COMMAND...: runs the command, then says "TEXT in N s".
timed() {
  local t text=$1
  t=$(now_ms)
  shift
  "$@"
  say "$text in $(secs $(($(now_ms) - t))) s"
}

# Stops whatever a (possibly killed) earlier `start` left in DIR and deletes it.
clean_dir() {
  if load_state; then
    # The data goes with the directory, so a clean shutdown (a checkpoint, page flushes) gains
    # nothing: PostgreSQL stops without a checkpoint (and frees its shared memory); MariaDB, which
    # keeps nothing outside its directory, is killed. The default suite's stop took 16-30 s either
    # way, and timed out while a build ran beside it: each step says how long it took, so that a
    # slow stop shows where.
    [[ -z "$PGBOUNCER" ]] || timed "PgBouncer stopped" pgb_halt fast
    [[ -z "$PG_BIN" ]] || timed "PostgreSQL stopped" pg_halt immediate
    [[ -z "$MARIADBD" ]] || timed "MariaDB stopped" my_halt kill
    if [[ "$BASE" != "$DIR" && "$BASE" == /tmp/sqllock-test.* ]]; then timed "removed $BASE" rm -rf "$BASE"; fi
  fi
  if [[ -f "$DIR/$marker" ]]; then
    find "$DIR" -mindepth 1 -delete
  elif [[ -n "$(ls -A "$DIR")" ]]; then
    die "$DIR is not empty and was not made by this script; not touching it"
  fi
}

# ---------------------------------------------------------------- commands --------------------
cmd_start() {
  local t0 want_pg=1 want_my=1 want_pgb=1 pg_rc=0 my_rc=0 pg_job my_job
  set_dir "$1"
  clean_dir
  touch "$DIR/$marker"
  t0=$(now_ms)
  : >"$DIR/env"
  if [[ -n "${SQLLOCK_TEST_PG_URI:-}" ]]; then
    want_pg=0
    echo "SQLLOCK_TEST_PG_URI=$SQLLOCK_TEST_PG_URI" >>"$DIR/env"
    [[ -z "${SQLLOCK_TEST_PG_RUNTIME_URI:-}" ]] ||
      echo "SQLLOCK_TEST_PG_RUNTIME_URI=$SQLLOCK_TEST_PG_RUNTIME_URI" >>"$DIR/env"
    say "PostgreSQL: using SQLLOCK_TEST_PG_URI from the environment"
  fi
  if [[ -n "${SQLLOCK_TEST_PGBOUNCER_URI:-}" ]]; then
    want_pgb=0
    echo "SQLLOCK_TEST_PGBOUNCER_URI=$SQLLOCK_TEST_PGBOUNCER_URI" >>"$DIR/env"
    [[ -z "${SQLLOCK_TEST_PGBOUNCER_OWNER_URI:-}" ]] ||
      echo "SQLLOCK_TEST_PGBOUNCER_OWNER_URI=$SQLLOCK_TEST_PGBOUNCER_OWNER_URI" >>"$DIR/env"
    say "PgBouncer: using SQLLOCK_TEST_PGBOUNCER_URI from the environment"
  fi
  if [[ -n "${SQLLOCK_TEST_MYSQL_URI:-}" ]]; then
    want_my=0
    echo "SQLLOCK_TEST_MYSQL_URI=$SQLLOCK_TEST_MYSQL_URI" >>"$DIR/env"
    [[ -z "${SQLLOCK_TEST_MYSQL_RUNTIME_URI:-}" ]] ||
      echo "SQLLOCK_TEST_MYSQL_RUNTIME_URI=$SQLLOCK_TEST_MYSQL_RUNTIME_URI" >>"$DIR/env"
    say "MariaDB: using SQLLOCK_TEST_MYSQL_URI from the environment"
  fi

  PG_BIN=; MARIADBD=; MARIADB_ADMIN=; MARIADB=; MARIADB_INSTALL_DB=; PGBOUNCER=
  if ((want_pg)) && ! PG_BIN=$(pg_bin); then
    want_pg=0; PG_BIN=
    required && die "PostgreSQL 15 is not installed (run scripts/install-deps.sh)"
    say "warning: PostgreSQL is not installed; its tests will be skipped"
  fi
  ((want_pg)) || want_pgb=0  # PgBouncer runs in front of our own PostgreSQL only
  if ((want_pgb)) && ! PGBOUNCER=$(pgb_prog); then
    want_pgb=0; PGBOUNCER=
    required && die "PgBouncer is not installed (package pgbouncer; run scripts/install-deps.sh)"
    say "warning: PgBouncer is not installed; its tests will be skipped"
  fi
  if ((want_my)) && ! { MARIADBD=$(my_prog mariadbd) && MARIADB_ADMIN=$(my_prog mariadb-admin) &&
    MARIADB=$(my_prog mariadb) && MARIADB_INSTALL_DB=$(my_prog mariadb-install-db); }; then
    want_my=0; MARIADBD=
    required && die "MariaDB server/client are not installed (run scripts/install-deps.sh)"
    say "warning: MariaDB is not installed; its tests will be skipped"
  fi

  chmod 755 "$DIR"  # the postgres user must be able to traverse it
  local base=$DIR
  if ((${#DIR} > 80)) || { ((EUID == 0 && want_pg)) && ! runuser -u postgres -- test -x "$DIR"; }; then
    base=$(mktemp -d /tmp/sqllock-test.XXXXXX)
    chmod 755 "$base"
  fi
  set_paths "$base"
  cat >"$DIR/state" <<EOF
BASE=$BASE
STATE_PG_BIN=$PG_BIN
STATE_PGBOUNCER=$PGBOUNCER
STATE_MARIADBD=$MARIADBD
STATE_MARIADB_ADMIN=$MARIADB_ADMIN
EOF

  pick_port PG_PORT; pick_port MY_PORT; pick_port PGB_PORT
  # Both servers initialise and start at the same time (about 1.5 s instead of 3 s); PgBouncer
  # starts once PostgreSQL is ready (pg_setup).
  if ((want_pg)); then pg_setup >"$DIR/pg-setup.log" 2>&1 & pg_job=$!; fi
  if ((want_my)); then my_setup >"$DIR/my-setup.log" 2>&1 & my_job=$!; fi
  if ((want_pg)); then wait "$pg_job" || pg_rc=$?; fi
  if ((want_my)); then wait "$my_job" || my_rc=$?; fi
  if ((pg_rc || my_rc)); then
    ((pg_rc)) &&
      { echo "PostgreSQL${PGBOUNCER:+ or PgBouncer} failed to start:" >&2; cat "$DIR/pg-setup.log" >&2; }
    ((my_rc)) && { echo "MariaDB failed to start:" >&2; cat "$DIR/my-setup.log" >&2; }
    [[ -n "$PGBOUNCER" ]] && pgb_halt fast
    [[ -n "$PG_BIN" ]] && pg_halt fast
    [[ -n "$MARIADBD" ]] && my_halt fast
    die "start failed; logs are in $BASE"
  fi

  if ((want_pg || want_my)); then
    {
      echo "SQLLOCK_TEST_SERVERS_SCRIPT=$script"
      echo "SQLLOCK_TEST_STATE_DIR=$DIR"
      if ((want_pg)); then cat "$DIR/pg.env"; fi
      if ((want_pgb)); then cat "$DIR/pgb.env"; fi
      if ((want_my)); then cat "$DIR/my.env"; fi
    } >>"$DIR/env"
  fi
  cat "$DIR"/*-setup.log 2>/dev/null || true
  ((want_pg)) && say "PostgreSQL running on 127.0.0.1:$PG_PORT (data $PG_DATA)"
  ((want_pgb)) &&
    say "PgBouncer running on 127.0.0.1:$(sed -n 's/^SQLLOCK_TEST_PGBOUNCER_PORT=//p' "$DIR/pgb.env")"
  ((want_my)) && say "MariaDB running on 127.0.0.1:$MY_PORT (data $MY_DATA)"
  say "ready in $(secs $(($(now_ms) - t0))) s; settings in $DIR/env"
}

cmd_stop() {
  [[ -n "${1:-}" ]] || die "missing DIR"
  [[ -d "$1" ]] || { say "nothing to stop in $1"; return 0; }
  DIR=$(cd "$1" && pwd -P)
  [[ -f "$DIR/$marker" ]] || die "$DIR was not made by this script; not touching it"
  if [[ "${SQLLOCK_TEST_KEEP_LOGS:-0}" != 0 ]] && load_state; then
    [[ -n "$PGBOUNCER" ]] && pgb_halt fast
    [[ -n "$PG_BIN" ]] && pg_halt fast
    [[ -n "$MARIADBD" ]] && my_halt fast
    local logs
    logs=$DIR/logs-$(date +%Y%m%d-%H%M%S)
    mkdir -p "$logs"
    cp "$PG_LOG" "$MY_LOG" "$PGB_LOG" "$logs/" 2>/dev/null || true
    mv "$logs" "${TMPDIR:-/tmp}/" && say "kept logs in ${TMPDIR:-/tmp}/${logs##*/}"
  fi
  clean_dir
  rmdir "$DIR" 2>/dev/null || true
  say "stopped; removed $DIR"
}

cmd_status() {
  [[ -d "${1:-}" ]] || die "no directory '${1:-}'"
  set_dir "$1"
  load_state || { say "no servers in $DIR"; return 1; }
  if [[ -n "$PG_BIN" ]]; then
    if ours "$(pg_pid)" "$PG_DATA"; then say "PostgreSQL: running (pid $(pg_pid), port $PG_PORT)"
    else say "PostgreSQL: stopped"; fi
  fi
  if [[ -n "$PGBOUNCER" ]]; then
    if ours "$(pgb_pid)" "$PGB_INI"; then say "PgBouncer: running (pid $(pgb_pid), port $PGB_PORT)"
    else say "PgBouncer: stopped"; fi
  fi
  if [[ -n "$MARIADBD" ]]; then
    if ours "$(my_pid)" "$MY_CNF"; then say "MariaDB: running (pid $(my_pid), port $MY_PORT)"
    else say "MariaDB: stopped"; fi
  fi
}

# Fault injection on one server of a running set: $1 = start|stop|restart|kill,
# $2 = pg|my|pgbouncer.
cmd_fault() {
  local action=$1 server=$2
  [[ -d "$3" ]] || die "no directory '$3' (run start first)"
  set_dir "$3"
  load_state || die "no servers in $DIR (run start first)"
  if [[ "$server" == pgbouncer ]]; then
    [[ -n "$PGBOUNCER" ]] || die "PgBouncer was not started by this script"
    case "$action" in
      stop | restart) pgb_halt fast ;;
      kill) pgb_halt kill ;;
    esac
    if [[ "$action" == start || "$action" == restart ]]; then
      ours "$(pgb_pid)" "$PGB_INI" || pgb_launch || { tail_logs "$PGB_LOG"; die "PgBouncer did not start"; }
    fi
  elif [[ "$server" == pg ]]; then
    [[ -n "$PG_BIN" ]] || die "PostgreSQL was not started by this script"
    case "$action" in
      stop) pg_halt fast ;;
      kill) pg_halt kill ;;
      restart) pg_halt fast ;;
    esac
    if [[ "$action" == start || "$action" == restart ]]; then
      ours "$(pg_pid)" "$PG_DATA" || pg_launch || { tail_logs "$PG_LOG"; die "PostgreSQL did not start"; }
    fi
  else
    [[ -n "$MARIADBD" ]] || die "MariaDB was not started by this script"
    case "$action" in
      stop) my_halt fast ;;
      kill) my_halt kill ;;
      restart) my_halt fast ;;
    esac
    if [[ "$action" == start || "$action" == restart ]]; then
      ours "$(my_pid)" "$MY_CNF" || my_launch || { tail_logs "$MY_LOG"; die "MariaDB did not start"; }
    fi
  fi
}

case "${1:-}" in
  start) cmd_start "${2:-}" ;;
  stop) cmd_stop "${2:-}" ;;
  status) cmd_status "${2:-}" ;;
  start-pg | stop-pg | restart-pg | kill-pg | start-my | stop-my | restart-my | kill-my | \
    start-pgbouncer | stop-pgbouncer | restart-pgbouncer | kill-pgbouncer)
    cmd_fault "${1%-*}" "${1##*-}" "${2:-}" ;;
  *) sed -n '2,36p' "$0" >&2; exit 2 ;;
esac
