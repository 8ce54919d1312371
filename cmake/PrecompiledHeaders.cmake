# SQLLOCK_PCH=ON (the presets of the test command's trees set it, but for the one the Debian packages
# are made from, which builds as a packager's does): the standard library headers most
# files include are compiled once per tree — once for the library's objects and once, with
# GoogleTest's, for the tests' own code — and every other file of the group starts from that.
# A cold build then takes a quarter less time in the `ci` tree (GCC 12) and half in the sanitizer
# tree (Clang 14), measured on two cores (docs/design.md, "the full tier's time, third round").
# Off by default, so a user's or a packager's build is compiled file by file; so are
# `scripts/demo.sh`'s `release` tree, the RelWithDebInfo tree and the add_subdirectory consumer
# test, which is what shows every library file includes what it uses. GCC 12 reports its
# -Warray-bounds false positive on std::string concatenation (in libstdc++'s char_traits.h) in a
# file compiled with the PCH at -O2 -g, where the same file compiled alone has it silenced as a
# system header's: one more reason the RelWithDebInfo tree stays without.
#
# Through ccache (cmake/CompilerCache.cmake) a precompiled header is cached only with the
# sloppiness set there, and Clang's only without its timestamp (-fno-pch-timestamp below).
option(SQLLOCK_PCH "Precompile the standard headers (and GoogleTest's, for the tests) once per tree" OFF)

set(SQLLOCK_PCH_STD_HEADERS
  <algorithm> <atomic> <chrono> <condition_variable> <cstdint> <exception> <functional> <map>
  <memory> <mutex> <optional> <stdexcept> <stop_token> <string> <string_view> <system_error>
  <thread> <utility> <variant> <vector>)

# sqllock_precompile(<target> OWN <headers…> | REUSE <owner>): <target> precompiles the standard
# headers and <headers…>, or uses the precompiled headers of <owner> (compiled with the same
# flags: GCC refuses one made with other optimisation or code-model options, and -Winvalid-pch
# with -Werror makes that an error, not a silent slow build). Nothing when SQLLOCK_PCH is off.
function(sqllock_precompile target mode)
  if(NOT SQLLOCK_PCH)
    return()
  endif()
  if(mode STREQUAL "OWN")
    target_precompile_headers(${target} PRIVATE ${SQLLOCK_PCH_STD_HEADERS} ${ARGN})
  elseif(mode STREQUAL "REUSE")
    target_precompile_headers(${target} REUSE_FROM ${ARGN})
  else()
    message(FATAL_ERROR "sqllock_precompile: OWN or REUSE, not '${mode}'")
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(${target} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
  endif()
endfunction()
