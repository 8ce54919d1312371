# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/lib/build-ahead.sh: the build trees that test.sh makes
# after the default one, and how each is configured and built, so that a tree built ahead in the
# background is the very tree its step then tests.

asan_build=${SQLLOCK_ASAN_BUILD_DIR:-build-asan}
jobs=$(nproc)

# Every tested tree: tests on, warnings as errors (never a default for users).
suite_args=(-DSQLLOCK_BUILD_TESTS=ON -DSQLLOCK_WERROR=ON)
# Sanitizers in Debug: they check the same either way, and an unoptimised build compiles faster.
asan_args=(-DSQLLOCK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DSQLLOCK_BUILD_BENCH=OFF)
# The other build types: built (library, programs, examples), not tested.
build_types=(RelWithDebInfo MinSizeRel)

type_dir() { echo "build-$(tr '[:upper:]' '[:lower:]' <<<"$1")"; }

type_args() {  # TYPE: sets the array targs to the configure options of its tree
  targs=(-DCMAKE_BUILD_TYPE="$1" -DSQLLOCK_WERROR=ON -DSQLLOCK_BUILD_TESTS=OFF -DSQLLOCK_BUILD_BENCH=OFF)
  # The RelWithDebInfo tree installs into /usr: the Debian packages are made from it.
  if [[ "$1" == RelWithDebInfo ]]; then targs+=(-DCMAKE_INSTALL_PREFIX=/usr); fi
}

cmake_build() {  # DIR CMAKE_ARGS...: configure and build one tree
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" && cmake --build "$dir" -j "$jobs"
}

# The sanitizers' settings, for the sanitizer tree's build (its test discovery runs the test
# programs) and tests. Leak checking on; a program stops at the first error of either sanitizer.
# scripts/lsan.supp lists leaks inside Debian's client libraries (with reasons), never sqllock's.
sanitizer_env() {
  export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:detect_stack_use_after_return=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  if [[ -f scripts/lsan.supp ]]; then
    LSAN_OPTIONS=suppressions=$(pwd -P)/scripts/lsan.supp:print_suppressions=0
    export LSAN_OPTIONS
  fi
}

# prebuild_mark STATE NAME: the files of NAME's build ahead in STATE, without their suffix (.log,
# .done); NAME is a tree's directory (maybe a path) or "fuzz".
prebuild_mark() { echo "$1/${2//\//_}"; }
