#!/usr/bin/env bash
# Checks that an installed sqllock works for an application:
#   check-consumer.sh BUILD_DIR [WORK_DIR]
# installs BUILD_DIR (a configured and built sqllock) into WORK_DIR/prefix with `cmake --install`,
# then configures, builds and runs tests/consumer against that prefix (CMAKE_PREFIX_PATH).
# WORK_DIR defaults to a temporary directory that is removed afterwards; a given WORK_DIR is
# emptied first and kept for inspection. Run by ctest as consumer.find_package.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
[[ -n "${1:-}" && -f "$1/CMakeCache.txt" ]] || { echo "usage: $0 BUILD_DIR [WORK_DIR]" >&2; exit 2; }
build=$(cd "$1" && pwd -P)
marker=.sqllock-consumer-check

if [[ -n "${2:-}" ]]; then
  work=$2
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

consumer_args=(-DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
  -DCMAKE_CXX_COMPILER="$(cache CMAKE_CXX_COMPILER)" -DCMAKE_BUILD_TYPE="$(cache CMAKE_BUILD_TYPE)")
if [[ "$(cache SQLLOCK_SANITIZE)" == ON ]]; then
  # An ASan-instrumented libsqllock needs the ASan runtime first in the program's library list.
  sanitize="-fsanitize=address,undefined"
  consumer_args+=("-DCMAKE_CXX_FLAGS=$sanitize" "-DCMAKE_EXE_LINKER_FLAGS=$sanitize")
fi

echo "== cmake --install $build --prefix $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" || { cat "$work/install.log"; exit 1; }
echo "== configure and build tests/consumer"
cmake -S "$src/tests/consumer" -B "$work/build" "${consumer_args[@]}" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
sed -n 's/^sqllock_DIR:PATH=/found: /p' "$work/build/CMakeCache.txt"
lib=$(ldd "$work/build/consumer" | awk '/libsqllock/ { print $3 }')
if [[ -n "$lib" && "$lib" != "$work/prefix/"* ]]; then  # empty: a static libsqllock
  echo "check-consumer.sh: consumer loads $lib, not the installed library" >&2
  exit 1
fi
echo "== run"
"$work/build/consumer" "$work"
