# shellcheck shell=bash
# Sourced by the scripts that run private servers for the tests (test-servers.sh, ha-servers.sh):
# messages, timing, processes, ports, logs, and what both need to run PostgreSQL and MariaDB.
#
#   die TEXT / say TEXT     error (exit 1) / message, prefixed with the script's name
#   now_ms, secs MS         the clock in milliseconds; milliseconds printed as seconds (1.23)
#   alive PID, ours PID TEXT, wait_exit PID SECONDS, children_of PID, group_of PGID
#   stop_group PGID TEXT SECONDS
#                           TERM, then after SECONDS KILL, the process group PGID, when one of its
#                           processes mentions TEXT on its command line
#   free_port, pick_port VAR [stable]
#                           a free loopback port, printed / assigned to VAR (pick_port also
#                           remembers it, so later picks of the same shell never repeat it;
#                           stable: below the kernel's ephemeral range)
#   tail_logs FILE...       the last lines of each non-empty FILE, on stderr
#   as_pg CMD...            CMD as user postgres when root (runuser), else as the caller
#   my_prog NAME            the path of a MariaDB program, also when /usr/sbin is not on PATH
#   template_dir, save_template
#                           initialised data directories kept for later starts (see below)

die() { echo "${0##*/}: $*" >&2; exit 1; }
say() { echo "${0##*/}: $*"; }
now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }
secs() { printf '%d.%02d' $(($1 / 1000)) $(($1 % 1000 / 10)); }  # milliseconds as seconds

# ---------------------------------------------------------------- processes -------------------
# PID is running. Daemons orphaned by these scripts are reaped late by PID 1 on some machines,
# so a zombie (state Z) counts as exited.
alive() {
  local stat
  [[ -n "$1" ]] && read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  stat=${stat##*) }
  [[ "${stat%% *}" != Z ]]
}
# PID is alive and its command line mentions TEXT (guards against a reused PID).
ours() { alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"; }
# Waits up to $2 seconds for PID $1 to exit.
wait_exit() {
  local i
  for ((i = 0; i < $2 * 50; i++)); do alive "$1" || return 0; sleep 0.02; done
  return 1
}

# PIDs of the living children of process $1.
children_of() {
  local f s state ppid
  for f in /proc/[0-9]*/stat; do
    read -r s 2>/dev/null <"$f" || continue
    s=${s##*) }
    read -r state ppid _ <<<"$s"
    if [[ "$ppid" == "$1" && "$state" != Z ]]; then f=${f#/proc/}; echo "${f%/stat}"; fi
  done
}

# PIDs of the living processes of process group $1.
group_of() {
  local f s state pgrp
  [[ "$1" =~ ^[0-9]+$ ]] || return 0
  for f in /proc/[0-9]*/stat; do
    read -r s 2>/dev/null <"$f" || continue
    s=${s##*) }
    read -r state _ pgrp _ <<<"$s"
    if [[ "$pgrp" == "$1" && "$state" != Z ]]; then f=${f#/proc/}; echo "${f%/stat}"; fi
  done
}

# Stops process group $1 (a server started with setsid, whose PID is the group's ID): SIGTERM,
# then SIGKILL for what is left after $3 seconds (0: SIGKILL at once). Only when one of the
# group's processes mentions $2 on its command line, so a reused ID is never signalled.
stop_group() {
  local pgid=$1 text=$2 limit=$3 pid mine=0 members i
  mapfile -t members < <(group_of "$pgid")
  for pid in "${members[@]}"; do ours "$pid" "$text" && { mine=1; break; }; done
  ((mine)) || return 0
  if ((limit > 0)); then
    kill -TERM -- "-$pgid" 2>/dev/null || true
    for ((i = 0; i < limit * 50; i++)); do
      [[ -z "$(group_of "$pgid")" ]] && return 0
      sleep 0.02
    done
  fi
  kill -KILL -- "-$pgid" 2>/dev/null || true
  for ((i = 0; i < 30 * 50; i++)); do
    [[ -z "$(group_of "$pgid")" ]] && return 0
    sleep 0.02
  done
  return 1
}

# ---------------------------------------------------------------- ports -----------------------
# A random TCP port in 20000..59999 that no socket of this machine uses (any state, IPv4 or 6)
# and that this shell has not picked before, assigned to the variable named $1. With $2 = stable,
# only ports below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 by
# default), which outgoing connections never take as their local port: for a server that binds
# its port long after the pick (a standby after its base backup, a Galera joiner's state
# transfer), when a connection made meanwhile could otherwise hold it.
pick_port() {
  local used=" ${picked_ports:-} " local_addr p span=40000 ephemeral
  if [[ "${2:-}" == stable ]] &&
    read -r ephemeral _ 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range &&
    ((ephemeral - 20000 >= 2000)); then
    span=$((ephemeral - 20000))
  fi
  while read -r _ local_addr _; do
    [[ "$local_addr" == *:* ]] && used+="$((16#${local_addr##*:})) "
  done < <(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  while :; do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % span))
    [[ "$used" == *" $p "* ]] || break
  done
  picked_ports="${picked_ports:-} $p"
  printf -v "$1" '%s' "$p"
}
# The same, printed. In $(free_port) the pick is not remembered by the calling shell.
free_port() { local port; pick_port port; echo "$port"; }

# ---------------------------------------------------------------- logs ------------------------
tail_logs() {
  local f
  for f in "$@"; do
    [[ -s "$f" ]] || continue
    echo "----- last lines of $f -----" >&2
    tail -n 25 "$f" >&2
  done
}

# ---------------------------------------------------------------- servers ---------------------
# PostgreSQL (and pg_autoctl, PgBouncer) refuse to run as root.
as_pg() { if ((EUID == 0)); then runuser -u postgres -- "$@"; else "$@"; fi; }

# Stops process $1 if it is alive and its command line mentions $2: $3 = fast (SIGTERM, then
# SIGKILL after 30 s) or kill (SIGKILL at once: a crash). $4 names it in the error when it does
# not exit.
halt_process() {
  ours "$1" "$2" || return 0
  if [[ "$3" == fast ]]; then
    kill -TERM "$1" 2>/dev/null || true
    wait_exit "$1" 30 && return 0
  fi
  kill -KILL "$1" 2>/dev/null || true
  wait_exit "$1" 30 || die "$4 (pid $1) did not exit"
}

# The [mysqld] settings every private MariaDB shares (test-servers.sh's server and the Galera
# nodes): character set, memory, and test-data durability.
my_common_conf() {
  cat <<'CONF'
# As Debian's packaged server and MySQL 8 (MariaDB's own default is latin1).
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
skip-name-resolve
max-connections = 300
innodb-buffer-pool-size = 64M
innodb-log-file-size = 32M
# Test data: these survive a server crash, not a machine crash.
innodb-flush-log-at-trx-commit = 2
innodb-doublewrite = 0
CONF
}

# The SQL that makes database sqllock_test and the users every private MariaDB has: the owner
# sqllock ($1: its password) with ALL on *.*, and $RUNTIME_ROLE ($2) with row rights and EXECUTE
# (the SQL guard of schema 6 is a stored function) only, in sqllock_test and the sqllock_fresh_*
# databases tests create (`_` escaped: a literal one).
my_users_sql() {
  cat <<SQL
CREATE DATABASE sqllock_test;
CREATE USER 'sqllock'@'%' IDENTIFIED BY '$1';
CREATE USER 'sqllock'@'localhost' IDENTIFIED BY '$1';
GRANT ALL ON *.* TO 'sqllock'@'%';
GRANT ALL ON *.* TO 'sqllock'@'localhost';
CREATE USER '$RUNTIME_ROLE'@'%' IDENTIFIED BY '$2';
CREATE USER '$RUNTIME_ROLE'@'localhost' IDENTIFIED BY '$2';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`sqllock\\_%\`.* TO '$RUNTIME_ROLE'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`sqllock\\_%\`.* TO '$RUNTIME_ROLE'@'localhost';
GRANT EXECUTE ON \`sqllock\\_%\`.* TO '$RUNTIME_ROLE'@'%';
GRANT EXECUTE ON \`sqllock\\_%\`.* TO '$RUNTIME_ROLE'@'localhost';
SQL
}

my_prog() {  # the path of a MariaDB program ($1), also when /usr/sbin is not on PATH
  command -v "$1" 2>/dev/null || { [[ -x "/usr/sbin/$1" ]] && echo "/usr/sbin/$1"; } || return 1
}

# A freshly initialised data directory is kept per user and server build, so that later starts
# copy it (about 0.2 s) instead of running initdb / mariadb-install-db (1-2 s each, several
# times that on a busy machine). SQLLOCK_TEST_TEMPLATES=0 turns this off. Bump init_format when
# the initialisation options of the scripts change (they must initialise a server the same way:
# test-servers.sh and ha-servers.sh share the MariaDB template). SQLLOCK_TEST_TEMPLATE_ROOT names
# the directory that keeps them (scripts/test.sh gives each run its own and removes it at the end).
init_format=1
template_dir() {  # $1: pg|my, $2: text naming the server build; prints the template's path
  [[ "${SQLLOCK_TEST_TEMPLATES:-1}" != 0 ]] || return 1
  local root
  root=${SQLLOCK_TEST_TEMPLATE_ROOT:-${TMPDIR:-/tmp}/sqllock-test-templates-$(id -u)}
  [[ -d "$root" ]] || mkdir -m 700 "$root" 2>/dev/null || return 1
  [[ -O "$root" && ! -L "$root" ]] || return 1  # never use another user's directory
  echo "$root/$1-$(cksum <<<"$init_format $2" | cut -d ' ' -f 1)"
}
save_template() {  # $1: template path, $2: the data directory to keep
  local tmp
  tmp=$(mktemp -d "${1%/*}/.new.XXXXXX") || return 0
  # Complete copies only, renamed into place at once; when another start won the race, drop ours.
  if cp -a "$2" "$tmp/data" && touch "$tmp/complete" && mv -T "$tmp" "$1" 2>/dev/null; then
    return 0
  fi
  rm -rf "$tmp"
}
