# SQLLOCK_CCACHE=ON (the presets of CMakePresets.json set it): compile sqllock's own targets through
# ccache when it is installed, so that a tree built again — after a checkout, in a fresh clone, or
# by the next run of scripts/test.sh — recompiles only what changed. Off by default: a user's or a
# packager's build never depends on it.
#
# Paths under the source directory are hashed relative to it (CCACHE_BASEDIR) and the working
# directory is left out of the hash of -g builds (CCACHE_NOHASHDIR), so a second clone of the
# repository in another folder reuses what the first compiled. The sloppiness lets ccache cache
# files compiled with a precompiled header (SQLLOCK_PCH, cmake/PrecompiledHeaders.cmake): it then
# hashes the header's source, not its build time, and ignores the predefined macros' order.
option(SQLLOCK_CCACHE "Compile through ccache when it is installed" OFF)
if(SQLLOCK_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(SQLLOCK_CCACHE_PROGRAM ccache)
  if(SQLLOCK_CCACHE_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}
        CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
        ${SQLLOCK_CCACHE_PROGRAM})
    message(STATUS "sqllock: compiling through ${SQLLOCK_CCACHE_PROGRAM}")
  else()
    message(STATUS "sqllock: SQLLOCK_CCACHE is on but ccache is not installed; compiling without it")
  endif()
endif()
