#!/usr/bin/env bash
# Installs what sqllock needs on Debian 12 (bookworm), as root. Idempotent: packages that are
# already installed are left alone, and apt is not touched at all when nothing is missing.
#
#   scripts/install-deps.sh              build tools + client libraries + test servers + clang
#                                        (fuzzing) + clang-format
#   scripts/install-deps.sh --no-servers build tools + client libraries only (enough for the demo)
#   scripts/install-deps.sh --check      print what is missing; exit 1 if anything is
#   scripts/install-deps.sh --bench      also what scripts/bench.sh needs (Redis, Node.js and npm,
#                                        valgrind, matplotlib)
#
# SQLLOCK_DEPS_SERVERS=0 in the environment is the same as --no-servers.
# The servers are installed but never started here: scripts/test-servers.sh runs private
# instances in a temporary directory.
set -euo pipefail

with_servers=${SQLLOCK_DEPS_SERVERS:-1}
check_only=0
with_bench=0
for arg in "$@"; do
  case "$arg" in
    --no-servers) with_servers=0 ;;
    --check) check_only=1 ;;
    --bench) with_bench=1 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

# Compiler and build tools (pkgconf provides the pkg-config program CMake's FindPkgConfig uses).
# The presets of CMakePresets.json build with Ninja, through ccache (a tree built again recompiles
# only what changed).
packages=(g++ make cmake pkgconf ninja-build ccache)
# Client libraries of the three drivers. libboost-dev: Connector/C++ 1.1's headers include Boost
# (it is a dependency of libmysqlcppconn-dev, named so the reason is visible). SOCI's backend
# headers include libpq-fe.h, mysql.h and sqlite3.h, but libsoci-dev does not depend on their -dev
# packages, hence libpq-dev, libmariadb-dev and libsqlite3-dev.
packages+=(libpqxx-dev libpq-dev libmysqlcppconn-dev libboost-dev libsoci-dev libmariadb-dev
  libsqlite3-dev)
# Tests and benchmarks: Debian 12's libgtest-dev ships the compiled libraries and GTest's CMake
# package; libgmock-dev adds GoogleMock. sqlite3 is the CLI the demo uses to show the table.
packages+=(libgtest-dev libgmock-dev libbenchmark-dev sqlite3)
# Packaging (cmake/Packaging.cmake, scripts/check-packages.sh): CPack's DEB generator computes the
# packages' dependencies with dpkg-shlibdeps (dpkg-dev) and tells ELF files apart with `file`;
# the package test installs the .debs into a clean Debian root made by debootstrap. groff-base
# lints the man pages (man/).
packages+=(dpkg-dev file debootstrap groff-base)
if [[ "$with_servers" != 0 ]]; then
  # Servers for the tests (postgresql-15 brings initdb/pg_ctl/psql under
  # /usr/lib/postgresql/15/bin) and python3-yaml, which validates docker-compose.yml.
  packages+=(postgresql-15 mariadb-server mariadb-client python3-yaml)
  # PgBouncer, which test-servers.sh puts in front of the private PostgreSQL (pooler tests).
  packages+=(pgbouncer)
  # The high-availability setups of scripts/ha-servers.sh: pg_auto_failover (its pg_autoctl and
  # the monitor's extension for PostgreSQL 15) for failover tests, and a three-node MariaDB
  # Galera cluster (galera-4 is the wsrep provider; new nodes copy their data by rsync SST, whose
  # script needs rsync and iproute2's `ss`; mariadb-backup is the other SST method's tool).
  packages+=(pg-auto-failover-cli postgresql-15-auto-failover galera-4 mariadb-backup rsync iproute2)
  # The fuzz targets the test command runs (fuzz/, scripts/fuzz.sh) and the sanitizer tree need
  # clang and its runtimes (libclang_rt.fuzzer, .asan, .ubsan), which Debian ships in
  # libclang-rt-14-dev; llvm-14 has llvm-symbolizer, without which Clang's sanitizers print bare
  # addresses and scripts/lsan.supp (which names functions) matches nothing.
  packages+=(clang-14 libclang-rt-14-dev llvm-14)
  # The test command's format check (scripts/check-format.sh, .clang-format).
  packages+=(clang-format-14)
fi
if ((with_bench)); then
  # scripts/bench.sh: the Redis peer, valgrind for the callgrind profile, matplotlib for the plots.
  # Node.js and npm (the npm advisory-lock peer) only when no npm is on PATH: a Node.js installed
  # from elsewhere already brings its own npm, and Debian's npm package would conflict with it.
  packages+=(redis-server valgrind python3-matplotlib)
  command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
fi

# Prints the packages of "$@" that are not installed (one dpkg-query call for all of them).
missing_of() {
  local -A ok=()
  local name status
  while read -r name status; do
    [[ "$status" == installed ]] && ok[$name]=1
  done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null || true)
  for name in "$@"; do
    [[ -n "${ok[$name]:-}" ]] || echo "$name"
  done
}

mapfile -t missing < <(missing_of "${packages[@]}")

if ((${#missing[@]} == 0)); then
  echo "install-deps.sh: all ${#packages[@]} packages are installed"
  exit 0
fi
if ((check_only)); then
  echo "install-deps.sh: missing: ${missing[*]}"
  exit 1
fi
if ((EUID != 0)); then
  echo "install-deps.sh: missing ${missing[*]}; run this script as root to install them" >&2
  exit 1
fi

echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive

# Keep maintainer scripts from starting services (mariadb-server and postgresql-15 would try):
# outside systemd, invoke-rc.d asks /usr/sbin/policy-rc.d, and exit 101 means "not allowed".
# Our own policy file is removed again afterwards; an existing one is left as it is.
policy=/usr/sbin/policy-rc.d
if [[ ! -e "$policy" ]]; then
  printf '#!/bin/sh\n# Temporary, from sqllock scripts/install-deps.sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi

apt_opts=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef
  -o Dpkg::Options::=--force-confold)
# The package lists may be missing (fresh image) or stale (a version they name is gone).
apt-get update -q
apt-get install "${apt_opts[@]}" "${missing[@]}"

mapfile -t still < <(missing_of "${packages[@]}")
if ((${#still[@]})); then
  echo "install-deps.sh: still missing after apt-get: ${still[*]}" >&2
  exit 1
fi
echo "install-deps.sh: done"
