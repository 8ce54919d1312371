#!/usr/bin/env bash
# Checks that sqllock works for an application the three ways one can take it in:
#   check-consumer.sh find_package BUILD_DIR [WORK_DIR]
#   check-consumer.sh pkg-config   BUILD_DIR [WORK_DIR]
#   check-consumer.sh subdirectory BUILD_DIR [WORK_DIR]
# find_package and pkg-config `cmake --install` BUILD_DIR (a configured and built sqllock) into
# WORK_DIR/prefix — a prefix the loader does not search — then build tests/consumer against it:
# with find_package(sqllock CONFIG REQUIRED COMPONENTS <every built driver>) (and check that a
# driver the build lacks fails the configure with sqllock's message), or with a plain compiler
# command line from `pkg-config --cflags --libs sqllock`. find_package also runs the installed
# `sqllock` program, which must find its library by its relative RPATH. subdirectory builds
# tests/consumer/subdirectory, a project that vendors this checkout with add_subdirectory(), and
# which fails to configure if sqllock changes the parent's settings or builds its tools or tests;
# it builds sqllock without the Connector/C++ driver, then installs that build and checks that
# find_package(sqllock COMPONENTS mysql) fails with sqllock's message.
#
# Each consumer runs against SQLite and, when configured, the test PostgreSQL server
# (SQLLOCK_TEST_PG_URI from the environment or from the file SQLLOCK_TEST_ENV_FILE, which the
# ctest fixture `servers` writes); a missing server fails when CI or SQLLOCK_TEST_REQUIRE_SERVERS
# is set. WORK_DIR defaults to a temporary directory that is removed afterwards; a given WORK_DIR
# is emptied first and kept for inspection. Run by ctest as consumer.<mode>.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
mode=${1:-}
[[ "$mode" =~ ^(find_package|pkg-config|subdirectory)$ && -n "${2:-}" && -f "$2/CMakeCache.txt" ]] ||
  { echo "usage: $0 find_package|pkg-config|subdirectory BUILD_DIR [WORK_DIR]" >&2; exit 2; }
build=$(cd "$2" && pwd -P)
marker=.sqllock-consumer-check

if [[ -n "${3:-}" ]]; then
  work=$3
  if [[ -d "$work" && -n "$(ls -A "$work")" && ! -f "$work/$marker" ]]; then
    echo "check-consumer.sh: $work is not empty and not ours; not touching it" >&2
    exit 1
  fi
  rm -rf "$work"
  mkdir -p "$work"
  work=$(cd "$work" && pwd -P)
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
touch "$work/$marker"

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
fail() { echo "check-consumer.sh: $*" >&2; exit 1; }
# Runs a command with its output in $work/<log>; prints the log when it fails.
logged() {
  local log=$work/$1
  shift
  "$@" >"$log" 2>&1 || { cat "$log"; fail "failed: $*"; }
}

# shellcheck source=lib/required.sh
source "$src/scripts/lib/required.sh"

# The databases each consumer runs against.
uris=("sqlite://$work/consumer.db")
pg_uri=${SQLLOCK_TEST_PG_URI:-}
if [[ -z "$pg_uri" && -n "${SQLLOCK_TEST_ENV_FILE:-}" && -f "$SQLLOCK_TEST_ENV_FILE" ]]; then
  pg_uri=$(sed -n 's/^SQLLOCK_TEST_PG_URI=//p' "$SQLLOCK_TEST_ENV_FILE")
fi
if [[ -n "$pg_uri" ]]; then
  uris+=("$pg_uri")
elif required; then
  fail "no PostgreSQL test server (SQLLOCK_TEST_PG_URI or SQLLOCK_TEST_ENV_FILE)"
else
  echo "check-consumer.sh: no PostgreSQL test server configured; SQLite only"
fi

compiler=$(cache CMAKE_CXX_COMPILER)
build_type=$(cache CMAKE_BUILD_TYPE)
flags=()
if [[ "$(cache SQLLOCK_SANITIZE)" == ON ]]; then
  # An ASan-instrumented libsqllock needs the ASan runtime first in the program's library list.
  flags=(-fsanitize=address,undefined)
fi
cmake_args=(-DCMAKE_CXX_COMPILER="$compiler" -DCMAKE_BUILD_TYPE="$build_type"
  -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
if ((${#flags[@]})); then
  cmake_args+=("-DCMAKE_CXX_FLAGS=${flags[*]}" "-DCMAKE_EXE_LINKER_FLAGS=${flags[*]}")
fi

install_build() {
  echo "== cmake --install $build --prefix $work/prefix"
  logged install.log cmake --install "$build" --prefix "$work/prefix"
}

installed_pc() {
  local pc
  pc=$(find "$work/prefix" -name sqllock.pc | head -n 1)
  [[ -n "$pc" ]] || fail "no sqllock.pc installed"
  echo "$pc"
}

# The consumer must load the library it was built against, not one from elsewhere.
check_loads() {
  local lib
  lib=$(ldd "$1" | awk '/libsqllock/ { print $3 }')
  [[ "$lib" == "$2"/* ]] || fail "$1 loads '$lib', not the library under $2"
  echo "loads: $lib"
}

# expect_missing_driver DRIVER COMPONENTS: configuring tests/consumer against $work/prefix with
# find_package(sqllock … COMPONENTS <COMPONENTS>) must fail, with sqllock's message naming DRIVER.
expect_missing_driver() {
  local log=$work/missing-$1.log message
  if cmake -S "$src/tests/consumer" -B "$work/build-missing-$1" "${cmake_args[@]}" \
    -DCMAKE_PREFIX_PATH="$work/prefix" "-DSQLLOCK_COMPONENTS=$2" >"$log" 2>&1; then
    fail "find_package(sqllock COMPONENTS ${2//;/ }) succeeded, but the build has no driver '$1'"
  fi
  # CMake wraps the message: compare it with its line breaks folded.
  message=$(tr -s ' \n' '  ' <"$log" | grep -o "has no driver '$1'[^.]*" || true)
  [[ -n "$message" ]] || { cat "$log"; fail "find_package failed without sqllock's message"; }
  echo "$message"
}

run_consumer() {
  echo "== run $1"
  "$1" "${uris[@]}"
}

case "$mode" in
  find_package)
    install_build
    drivers=$(sed -n 's/^drivers=//p' "$(installed_pc)")
    [[ -n "$drivers" ]] || fail "the installed sqllock.pc names no drivers"
    components=${drivers// /;}
    echo "== configure tests/consumer with COMPONENTS $drivers"
    logged configure.log cmake -S "$src/tests/consumer" -B "$work/build" "${cmake_args[@]}" \
      -DCMAKE_PREFIX_PATH="$work/prefix" "-DSQLLOCK_COMPONENTS=$components"
    sed -n 's/^sqllock_DIR:PATH=/found: /p' "$work/build/CMakeCache.txt"
    logged build.log cmake --build "$work/build"
    check_loads "$work/build/consumer" "$work/prefix"
    run_consumer "$work/build/consumer"

    echo "== a driver the build lacks fails find_package clearly"
    expect_missing_driver oracle "pqxx;oracle"

    echo "== the installed sqllock program runs from the prefix (relative RPATH)"
    runpath=$(readelf -d "$work/prefix/bin/sqllock" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
    [[ "$runpath" == '$ORIGIN/'* ]] || fail "bin/sqllock has RUNPATH '$runpath', not \$ORIGIN/…"
    echo "RUNPATH: $runpath"
    env -u LD_LIBRARY_PATH "$work/prefix/bin/sqllock" migrate --db "sqlite://$work/tool.db"
    check_loads "$work/prefix/bin/sqllock" "$work/prefix"
    ;;
  pkg-config)
    install_build
    pcdir=$(dirname "$(installed_pc)")
    export PKG_CONFIG_PATH=$pcdir
    cflags=$(pkg-config --cflags sqllock)
    libs=$(pkg-config --libs sqllock)
    libdir=$(pkg-config --variable=libdir sqllock)
    echo "pkg-config: cflags '$cflags', libs '$libs', version $(pkg-config --modversion sqllock)"
    echo "== compile tests/consumer/main.cpp with the pkg-config flags"
    # shellcheck disable=SC2086 # the flags are words
    logged build.log "$compiler" -std=c++20 -Wall -Wextra -Wpedantic -Werror "${flags[@]}" \
      "$src/tests/consumer/main.cpp" $cflags $libs "-Wl,-rpath,$libdir" -o "$work/consumer"
    check_loads "$work/consumer" "$work/prefix"
    run_consumer "$work/consumer"
    ;;
  subdirectory)
    echo "== configure tests/consumer/subdirectory (add_subdirectory of this checkout)"
    # Only the drivers this consumer uses (SOCI for SQLite, libpqxx), and CMake's default of no
    # build type (no optimisation), to keep the build short: it compiles the library once more.
    logged configure.log cmake -S "$src/tests/consumer/subdirectory" -B "$work/build" "${cmake_args[@]}" \
      -DCMAKE_BUILD_TYPE= -DSQLLOCK_SOURCE_DIR="$src" -DSQLLOCK_WITH_MYSQL=OFF
    # At the lowest priority: under ctest, tests with timing bounds run beside this build.
    logged build.log nice -n 19 cmake --build "$work/build" -j "$(nproc)"
    check_loads "$work/build/consumer" "$work/build"
    echo "== cmake --install of the parent installs nothing of sqllock"
    logged install.log cmake --install "$work/build" --prefix "$work/prefix"
    [[ ! -e "$work/prefix" || -z "$(find "$work/prefix" -type f)" ]] ||
      fail "the parent's install installed: $(find "$work/prefix" -type f | head -n 5)"
    run_consumer "$work/build/consumer"

    # This sqllock has no Connector/C++ driver: installed (asked for with SQLLOCK_INSTALL=ON; the
    # same objects, nothing recompiled), a find_package that needs it must fail and say so, and
    # its adapter header must not be installed.
    echo "== find_package(sqllock COMPONENTS mysql) against a build without that driver"
    logged reconfigure.log cmake "$work/build" -DSQLLOCK_INSTALL=ON
    logged install-sqllock.log cmake --install "$work/build" --prefix "$work/prefix"
    [[ -f "$work/prefix/include/sqllock/adapters/pqxx.hpp" && ! -e "$work/prefix/include/sqllock/adapters/mysql.hpp" ]] ||
      fail "adapter headers installed: $(ls "$work/prefix/include/sqllock/adapters")"
    expect_missing_driver mysql mysql
    logged configure-built.log cmake -S "$src/tests/consumer" -B "$work/build-built" "${cmake_args[@]}" \
      -DCMAKE_PREFIX_PATH="$work/prefix" "-DSQLLOCK_COMPONENTS=pqxx;soci"
    echo "find_package(sqllock COMPONENTS pqxx soci): found"
    ;;
esac
echo "check-consumer.sh $mode: passed"
