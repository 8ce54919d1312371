#!/usr/bin/env bash
# Builds sqllock's Debian packages with CPack (cmake/Packaging.cmake), checks what each contains,
# then installs them into a clean Debian root made by debootstrap and uses them there: apt
# resolves their dependencies from Debian's archive (so the Depends lines are proven), the
# `sqllock` command migrates, runs a command under a lock and shows status, sqllock-reaper runs
# a pass, the programs load libsqllock from /usr/lib, the man pages and the systemd unit are in
# place; then, with the -dev package, g++, pkgconf and cmake, a small program is built with
# pkg-config and with find_package(sqllock) and run; last, purging removes every file.
#
#   check-packages.sh BUILD_DIR [WORK_DIR]
#
# BUILD_DIR: a configured and built sqllock tree. It is packaged as it is when it was configured
# with -DCMAKE_INSTALL_PREFIX=/usr (shared, not sanitized, with the tools); otherwise a tree
# configured for /usr is built in WORK_DIR/build with BUILD_DIR's compiler and drivers (a few
# minutes the first time, incremental afterwards). WORK_DIR (default: a temporary directory,
# removed afterwards) keeps that tree, the packages (WORK_DIR/debs) and the logs; the Debian
# root is always removed, after /proc is unmounted from it.
#
# Needs root (debootstrap, chroot) and network access to the Debian archive this machine's apt
# uses (/etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list). Without them it exits
# 77 (skipped), unless CI or SQLLOCK_TEST_REQUIRE_SERVERS is set: then it fails. Run by ctest as
# package.deb. The host's dpkg database is only read (by dpkg-shlibdeps), never changed.
#
# Environment:
#   SQLLOCK_PKG_MIRROR      the archive for debootstrap (default: the one apt uses here)
#   SQLLOCK_PKG_ROOT_CACHE  a directory in which to keep the untouched debootstrap result (a
#                           tarball, renewed after 7 days), so that later runs unpack it
#                           (seconds) instead of running debootstrap (minutes). Unset: WORK_DIR/
#                           debootstrap-cache when WORK_DIR is given; empty: debootstrap every time
#   SQLLOCK_PKG_DEV_CHECK   0 skips the -dev phase (g++, pkgconf and cmake in the root)
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
me=check-packages.sh
timings=()  # "phase  seconds" lines, printed at the end (and on failure)
phase_name=""
usage() { sed -n '10,11p' "$0" | sed 's/^# *//' >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 && -f "${1:-}/CMakeCache.txt" ]] || usage
build=$(cd "$1" && pwd -P)

fail() { echo "$me: FAILED: $*" >&2; exit 1; }
# shellcheck source=lib/required.sh
source "$src/scripts/lib/required.sh"
# Cannot run here: skipped (77), or a failure when CI or SQLLOCK_TEST_REQUIRE_SERVERS is set.
skip() {
  if required; then fail "$* (required: CI or SQLLOCK_TEST_REQUIRE_SERVERS is set)"; fi
  echo "$me: skipped: $*"
  exit 77
}

((EUID == 0)) || skip "needs root to make a Debian root with debootstrap and chroot into it"
for tool in cmake cpack dpkg-deb dpkg-shlibdeps dpkg-architecture file debootstrap chroot readelf flock; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (scripts/install-deps.sh installs it)"
done

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -1; }

# ---- work directory, clean-up ----------------------------------------------------------------
marker=.sqllock-check-packages
if [[ -n "${2:-}" ]]; then
  work=$2
  if [[ -d "$work" && -n "$(ls -A "$work")" && ! -f "$work/$marker" ]]; then
    fail "$work is not empty and not ours; not touching it"
  fi
  mkdir -p "$work"
  work=$(cd "$work" && pwd -P)
  remove_work=0
else
  work=$(mktemp -d "${TMPDIR:-/var/tmp}/sqllock-packages.XXXXXX")
  remove_work=1
fi
touch "$work/$marker"
exec 9>"$work/.lock"
flock -n 9 || fail "another check-packages.sh is using $work"
root=$work/root
logs=$work/logs

# Mount points at or below $1, deepest first (from /proc/self/mounts; \040 etc. stay escaped, and
# our paths have no such characters).
mounts_below() { awk -v p="$1" '$2 == p || index($2, p "/") == 1 { print $2 }' /proc/self/mounts | sort -r; }
remove_root() {
  [[ -e "$root" ]] || return 0
  local m
  for m in $(mounts_below "$root"); do
    umount "$m" 2>/dev/null || umount -l "$m" || true
  done
  if [[ -n "$(mounts_below "$root")" ]]; then
    echo "$me: $root still has mounts; not removing it" >&2
    return 1
  fi
  rm -rf --one-file-system "$root"
}
cleanup() {
  local rc=$?
  if ((rc != 0 && rc != 77)) && [[ -n "$phase_name" ]]; then
    echo "$me: failed in phase '$phase_name' (exit $rc)" >&2
    print_timings
  fi
  remove_root || rc=1
  if ((remove_work)) && [[ ! -e "$root" ]]; then rm -rf --one-file-system "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
remove_root || fail "a root left by an earlier run is still mounted: $root"  # e.g. killed by a timeout
rm -rf "$logs" "$work/debs" "$work/cpack" "$work/contents" "$work/all"
mkdir -p "$logs" "$work/debs"

# ---- timing ------------------------------------------------------------------------------------
phase_start=0
now() { date +%s%N; }
end_phase() {
  [[ -n "$phase_name" ]] || return 0
  local ms=$((($(now) - phase_start) / 1000000))
  timings+=("$(printf '%-42s %4d.%01d s' "$phase_name" $((ms / 1000)) $((ms % 1000 / 100)))")
  phase_name=""
}
phase() {
  end_phase
  phase_name=$1
  phase_start=$(now)
  printf '\n==== %s\n' "$1"
}
print_timings() {
  end_phase
  printf '\n==== time per phase\n'
  printf '  %s\n' "${timings[@]}"
}
# Runs a command with its output in a log, shown (the end of it) only when it fails.
logged() {
  local log=$logs/$1
  shift
  "$@" >"$log" 2>&1 || { tail -n 60 "$log" >&2; fail "$* (log: $log)"; }
}

# ---- 1. the tree to package ----------------------------------------------------------------------
phase "build tree"
prefix=$(cache CMAKE_INSTALL_PREFIX)
if [[ "$prefix" =~ ^/usr/?$ && "$(cache BUILD_SHARED_LIBS)" != OFF && "$(cache SQLLOCK_SANITIZE)" != ON &&
      "$(cache SQLLOCK_BUILD_TOOLS)" != OFF && -f "$build/CPackConfig.cmake" ]]; then
  tree=$build
  echo "packaging $build (configured for /usr)"
else
  tree=$work/build
  echo "$build installs into ${prefix:-?} (or is static, sanitized or without tools):"
  echo "building a tree configured for /usr in $tree"
  generator=$(cache CMAKE_GENERATOR)
  args=(-S "$src" -B "$tree" -G "${generator:-Unix Makefiles}" -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_SHARED_LIBS=ON -DSQLLOCK_SANITIZE=OFF -DSQLLOCK_INSTALL=ON
    -DSQLLOCK_BUILD_TOOLS=ON -DSQLLOCK_BUILD_TESTS=OFF -DSQLLOCK_BUILD_BENCH=OFF
    -DSQLLOCK_BUILD_EXAMPLES=OFF)
  for var in CMAKE_CXX_COMPILER CMAKE_CXX_COMPILER_LAUNCHER SQLLOCK_WITH_PQXX SQLLOCK_WITH_MYSQL \
             SQLLOCK_WITH_SOCI; do
    value=$(cache "$var")
    [[ -z "$value" ]] || args+=("-D$var=$value")
  done
  logged configure.log cmake "${args[@]}"
  # At low priority: under ctest, tests with timing bounds may be running beside this build.
  logged build.log nice -n 10 cmake --build "$tree" -j "$(nproc)"
fi
tcache() { sed -n "s/^$1:[A-Z]*=//p" "$tree/CMakeCache.txt" | head -1; }
libdir=$(tcache CMAKE_INSTALL_LIBDIR)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
[[ "$libdir" == "lib/$multiarch" ]] ||
  fail "the tree's CMAKE_INSTALL_LIBDIR is '$libdir', not the multiarch lib/$multiarch"

# ---- 2. the packages ---------------------------------------------------------------------------
phase "cpack -G DEB"
(cd "$tree" && logged cpack.log cpack -G DEB -B "$work/cpack")
cp "$work"/cpack/*.deb "$work/debs/"
cd "$work/debs"
shopt -s nullglob
debs=(*.deb)
shopt -u nullglob
((${#debs[@]} == 3)) || fail "expected 3 packages, cpack made: ${debs[*]:-none}"
for deb in "${debs[@]}"; do
  printf '%-40s %8d bytes  Depends: %s\n' "$deb" "$(stat -c %s "$deb")" "$(dpkg-deb -f "$deb" Depends)"
done

# ---- 3. what each package contains ----------------------------------------------------------------
phase "package contents"
mkdir -p "$work/contents"
# Files and links of a package, one path a line without the leading "./" (directories left out).
contents() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print substr($6, 3) }'; }
one() {  # the single file matching a glob pattern
  local matches
  mapfile -t matches < <(compgen -G "$1" || true)
  ((${#matches[@]} == 1)) || fail "expected one $1, found: ${matches[*]:-none}"
  echo "${matches[0]}"
}
runtime_deb=$(one 'libsqllock[0-9]*_*.deb')
dev_deb=$(one 'libsqllock-dev_*.deb')
tools_deb=$(one 'sqllock_*.deb')
version=$(dpkg-deb -f "$runtime_deb" Version)
runtime_pkg=$(dpkg-deb -f "$runtime_deb" Package)

# The runtime package: the library and its SONAME link, named after the SONAME (policy 8.1).
dpkg-deb -x "$runtime_deb" "$work/contents/runtime"
real_lib=$(one "$work/contents/runtime/usr/lib/$multiarch/libsqllock.so.*.*.*")
soname=$(readelf -d "$real_lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$soname" =~ ^libsqllock\.so\.([0-9][0-9.]*)$ ]] || fail "library SONAME is '$soname'"
[[ "$runtime_pkg" == "libsqllock${BASH_REMATCH[1]}" ]] ||
  fail "runtime package is $runtime_pkg, its SONAME $soname says libsqllock${BASH_REMATCH[1]}"
runtime_files=$(contents "$runtime_deb")
grep -qxF "usr/lib/$multiarch/$soname" <<<"$runtime_files" || fail "$runtime_deb has no $soname link"
stray=$(grep -vxF -e "usr/lib/$multiarch/$soname" -e "usr/lib/$multiarch/$(basename "$real_lib")" <<<"$runtime_files" |
  grep -v "^usr/share/doc/$runtime_pkg/" || true)
[[ -z "$stray" ]] || fail "$runtime_deb should hold only the library, but also has:"$'\n'"$stray"
echo "$runtime_deb: $soname, $(basename "$real_lib")"

# The -dev package: headers, the libsqllock.so link, CMake package, sqllock.pc; nothing else.
dev_files=$(contents "$dev_deb")
for f in usr/include/sqllock/sqllock.hpp "usr/lib/$multiarch/libsqllock.so" \
         "usr/lib/$multiarch/pkgconfig/sqllock.pc" "usr/lib/$multiarch/cmake/sqllock/sqllockConfig.cmake" \
         "usr/lib/$multiarch/cmake/sqllock/sqllockConfigVersion.cmake" \
         "usr/lib/$multiarch/cmake/sqllock/sqllockTargets.cmake"; do
  grep -qxF "$f" <<<"$dev_files" || fail "$dev_deb has no $f"
done
dev_link=$(dpkg-deb -c "$dev_deb" | awk -v f="./usr/lib/$multiarch/libsqllock.so" '$6 == f { print $8 }')
[[ "$dev_link" == "$soname" ]] || fail "libsqllock.so in $dev_deb points to '$dev_link', not $soname"
stray=$(grep -vE "^usr/include/sqllock/|^usr/lib/$multiarch/(libsqllock\.so|pkgconfig/sqllock\.pc|cmake/sqllock/[^/]+)$|^usr/share/doc/libsqllock-dev/" <<<"$dev_files" || true)
[[ -z "$stray" ]] || fail "$dev_deb holds files that are not development files:"$'\n'"$stray"
[[ "$(dpkg-deb -f "$dev_deb" Depends)" == *"$runtime_pkg (= $version)"* ]] ||
  fail "$dev_deb does not depend on $runtime_pkg (= $version): $(dpkg-deb -f "$dev_deb" Depends)"
echo "$dev_deb: $(grep -c '^usr/include/' <<<"$dev_files") headers, sqllock.pc, CMake package, libsqllock.so -> $dev_link"

# The tools package: the two programs, their man pages, the systemd unit.
tools_files=$(contents "$tools_deb")
for f in usr/bin/sqllock usr/bin/sqllock-reaper usr/lib/systemd/system/sqllock-reaper.service; do
  grep -qxF "$f" <<<"$tools_files" || fail "$tools_deb has no $f"
done
for f in usr/share/man/man1/sqllock.1 usr/share/man/man8/sqllock-reaper.8; do
  grep -qxE "$f(\.gz)?" <<<"$tools_files" || fail "$tools_deb has no man page $f"
done
stray=$(grep -vE '^usr/bin/sqllock(-reaper)?$|^usr/share/man/man[1-8]/[^/]+$|^usr/lib/systemd/system/sqllock-reaper\.service$|^usr/share/doc/sqllock/' <<<"$tools_files" || true)
[[ -z "$stray" ]] || fail "$tools_deb holds unexpected files:"$'\n'"$stray"
[[ "$(dpkg-deb -f "$tools_deb" Depends)" == *"$runtime_pkg "* ]] ||
  fail "$tools_deb does not depend on $runtime_pkg: $(dpkg-deb -f "$tools_deb" Depends)"
echo "$tools_deb: the programs, man pages, systemd unit"

# Every file the install rules install is in one of the packages (a rule without one of the
# three components would silently be left out of them).
logged install-all.log cmake --install "$tree" --prefix "$work/all/usr"
unpackaged=$(comm -23 <(cd "$work/all" && find . ! -type d | sed 's|^\./||' | sort) \
  <(for deb in "${debs[@]}"; do contents "$deb"; done | sort))
[[ -z "$unpackaged" ]] || fail "installed by the install rules but in no package:"$'\n'"$unpackaged"
echo "every installed file is in a package"

# ---- 4. a clean Debian root ----------------------------------------------------------------------
phase "clean root (debootstrap)"
suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null | tr -d '"' || true)
suite=${suite:-bookworm}
arch=$(dpkg --print-architecture)
sources=/etc/apt/sources.list.d/debian.sources
mirror=${SQLLOCK_PKG_MIRROR:-}
if [[ -z "$mirror" && -f "$sources" ]]; then
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' "$sources" | head -1)
fi
if [[ -z "$mirror" && -f /etc/apt/sources.list ]]; then
  mirror=$(sed -E -n 's/^deb +(\[[^]]*\] +)?([^ ]+).*/\2/p' /etc/apt/sources.list | head -1)
fi
mirror=${mirror:-http://deb.debian.org/debian}
echo "suite $suite ($arch), archive $mirror"
base=""
if ((remove_work)); then
  base_dir=${SQLLOCK_PKG_ROOT_CACHE:-}
else
  base_dir=${SQLLOCK_PKG_ROOT_CACHE-$work/debootstrap-cache}
fi
if [[ -n "$base_dir" ]]; then
  base=$base_dir/$suite-$arch-minbase.tar
fi
mkdir -p "$root"
if [[ -n "$base" && -n "$(find "$base" -mtime -7 2>/dev/null)" ]]; then
  echo "unpacking the debootstrap result cached in $base"
  tar -C "$root" -xf "$base"
else
  if ! debootstrap --variant=minbase --arch="$arch" "$suite" "$root" "$mirror" >"$logs/debootstrap.log" 2>&1; then
    tail -n 30 "$logs/debootstrap.log" >&2
    if grep -qiE 'Failed getting release file|Temporary failure resolving|Could not resolve|unable to connect|Connection refused|Network is unreachable' "$logs/debootstrap.log"; then
      skip "the Debian archive $mirror cannot be reached (set SQLLOCK_PKG_MIRROR?)"
    fi
    fail "debootstrap (log: $logs/debootstrap.log)"
  fi
  if [[ -n "$base" ]]; then
    mkdir -p "$(dirname "$base")"
    tar -C "$root" -cf "$base.part.$$" . && mv "$base.part.$$" "$base"
    echo "cached the debootstrap result in $base"
  fi
fi
# apt in the root uses this machine's archive (and suites, e.g. security updates) and resolver.
if [[ -f "$sources" ]]; then
  cp "$sources" "$root/etc/apt/sources.list.d/debian.sources"
  rm -f "$root/etc/apt/sources.list"
elif [[ -f /etc/apt/sources.list ]]; then
  cp /etc/apt/sources.list "$root/etc/apt/sources.list"
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# No service starts in the root (none of ours does; a dependency might try).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mkdir -p "$root/tmp/debs"
cp "${debs[@]}" "$root/tmp/debs/"
chmod 755 "$root/tmp/debs" && chmod 644 "$root"/tmp/debs/*.deb  # readable by apt's _apt user
# Runs a bash script in the root as root, with a clean environment.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -euo pipefail -c "$1"
}

# ---- 5. install the library and the tools with apt -----------------------------------------------
phase "apt-get install runtime + tools"
apt_opts="-y -q --no-install-recommends -o Dpkg::Options::=--force-confold"
logged apt-update.log in_root "apt-get update -q"
logged apt-install.log in_root "cd /tmp/debs && apt-get install $apt_opts ./$runtime_deb ./$tools_deb"
in_root "dpkg-query -W -f='\${Package} \${Version} \${db:Status-Status}\n' $runtime_pkg sqllock"
echo "apt set up $(grep -c '^Setting up ' "$logs/apt-install.log") packages: these two and their dependencies from the archive"

# ---- 6. use them -----------------------------------------------------------------------------------
phase "run the installed programs"
# shellcheck disable=SC2016 # expanded by the shell in the root
in_root '
show() { printf "\$ %s\n" "$*"; "$@"; }
db=sqlite:///tmp/x.db
show sqllock migrate --db "$db"
show sqllock run --db "$db" --lock demo -- true
# While `run` holds the lock, status (run under it) lists it.
echo "\$ sqllock run --db $db --lock demo -- sqllock status --db $db"
held=$(sqllock run --db "$db" --lock demo -- sqllock status --db "$db")
printf "%s\n" "$held"
grep -q demo <<<"$held" || { echo "status under the lock does not list demo" >&2; exit 1; }
show sqllock status --db "$db"
show sqllock-reaper --help >/tmp/reaper-help.txt
head -n 3 /tmp/reaper-help.txt
show sqllock-reaper --db "$db" --once
# The programs load libsqllock from /usr/lib (no RPATH into a build tree, nothing missing).
for program in /usr/bin/sqllock /usr/bin/sqllock-reaper; do
  ldd "$program" >/tmp/ldd.txt
  if grep -q "not found" /tmp/ldd.txt; then cat /tmp/ldd.txt; exit 1; fi
  lib=$(awk "/libsqllock/ { print \$3 }" /tmp/ldd.txt)
  real=$(readlink -f "$lib")
  case "$real" in
    /usr/lib/*/libsqllock.so.*) echo "$program loads $lib ($real)" ;;
    *) echo "$program loads libsqllock from ${lib:-nowhere}" >&2; exit 1 ;;
  esac
done
if ldd /usr/lib/*/libsqllock.so.*.*.* | grep "not found"; then exit 1; fi
for page in /usr/share/man/man1/sqllock.1 /usr/share/man/man8/sqllock-reaper.8; do
  if [ -f "$page" ] || [ -f "$page.gz" ]; then echo "man page: $(ls "$page"*)"; else echo "no $page" >&2; exit 1; fi
done
unit=/usr/lib/systemd/system/sqllock-reaper.service
exec_start=$(sed -n "s/^ExecStart=\([^ ]*\).*/\1/p" "$unit")
[ "$exec_start" = /usr/bin/sqllock-reaper ] && [ -x "$exec_start" ] ||
  { echo "$unit: ExecStart runs \"$exec_start\"" >&2; exit 1; }
echo "systemd unit: $unit (ExecStart=$exec_start ...)"
'

# ---- 7. build against the -dev package -------------------------------------------------------------
if [[ "${SQLLOCK_PKG_DEV_CHECK:-1}" != 0 ]]; then
  phase "apt-get install -dev + g++ pkgconf cmake"
  logged apt-install-dev.log in_root "cd /tmp/debs && apt-get install $apt_opts ./$dev_deb g++ make pkgconf cmake"
  echo "$(grep -c '^Setting up ' "$logs/apt-install-dev.log") packages set up"

  phase "compile against the -dev package"
  # One small application, built the two ways an application would: pkg-config and find_package.
  mkdir -p "$root/tmp/app"
  cat >"$root/tmp/app/app.cpp" <<'END_OF_APP'
#include <iostream>
#include <mutex>
#include <string>

#include <sqllock/sqllock.hpp>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  sqllock::database db(std::string("sqlite://") + argv[1]);
  sqllock::migrate(db);
  sqllock::table_lock lock(db, "app");
  std::unique_lock guard(lock);
  std::cout << "took the lock 'app', fence " << lock.fence() << ", driver " << db.driver_name() << "\n";
  return lock.fence() > 0 ? 0 : 1;
}
END_OF_APP
  cat >"$root/tmp/app/CMakeLists.txt" <<'END_OF_APP'
cmake_minimum_required(VERSION 3.20)
project(app LANGUAGES CXX)
find_package(sqllock CONFIG REQUIRED)
add_executable(app app.cpp)
target_link_libraries(app PRIVATE sqllock::sqllock)
target_compile_options(app PRIVATE -Wall -Wextra -Werror)
END_OF_APP
  # shellcheck disable=SC2016 # expanded by the shell in the root
  in_root '
cd /tmp/app
flags=$(pkg-config --cflags --libs sqllock)
echo "\$ g++ -std=c++20 -Wall -Wextra -Werror app.cpp $flags -o app"
g++ -std=c++20 -Wall -Wextra -Werror app.cpp $flags -o app
./app /tmp/app/pkg-config.db
echo "\$ cmake -S . -B build && cmake --build build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >cmake.log 2>&1 || { cat cmake.log; exit 1; }
sed -n "s/^sqllock_DIR:PATH=/found sqllock_DIR=/p" build/CMakeCache.txt
cmake --build build >>cmake.log 2>&1 || { cat cmake.log; exit 1; }
./build/app /tmp/app/find-package.db
'
fi

# ---- 8. remove them again ---------------------------------------------------------------------------
phase "apt-get purge"
installed=$(in_root "dpkg-query -W -f='\${Package} \${db:Status-Status}\n' $runtime_pkg libsqllock-dev sqllock 2>/dev/null" |
  awk '$2 == "installed" { printf "%s ", $1 }' || true)
logged apt-purge.log in_root "apt-get purge -y -q $installed"
# shellcheck disable=SC2016 # expanded by the shell in the root
in_root '
left=$(ls -d /usr/bin/sqllock* /usr/lib/*/libsqllock* /usr/include/sqllock /usr/lib/*/cmake/sqllock \
  /usr/lib/*/pkgconfig/sqllock.pc /usr/lib/systemd/system/sqllock-reaper.service 2>/dev/null || true)
[ -z "$left" ] || { echo "left after purge: $left" >&2; exit 1; }
echo "purged: no sqllock file left"
'

print_timings
printf '\n%s: the packages install and work on a clean Debian %s: %s\n' "$me" "$suite" "${debs[*]}"
