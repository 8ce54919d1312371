# Debian packages made with CPack's DEB generator, one per install component:
#
#   runtime  →  libsqllock<SOVERSION>   the shared library (named after its SONAME, Debian policy 8.1)
#   dev      →  libsqllock-dev          headers, the libsqllock.so link, CMake package, sqllock.pc
#   tools    →  sqllock                 sqllock and sqllock-reaper, their man pages, the systemd unit
#
# The packages install into /usr, and the library directory is fixed when the tree is configured
# (GNUInstallDirs gives lib/<multiarch> only for the prefix /usr, and sqllock.pc and the CMake
# package are generated from it), so build them from a tree configured for /usr:
#
#   cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr
#   cmake --build build-deb -j && (cd build-deb && cpack -G DEB)
#
# `cpack -G DEB` in a tree with any other prefix stops with that advice rather than making
# packages with the wrong paths. scripts/check-packages.sh builds the packages (in a tree of its
# own when the given one is not configured for /usr) and installs them into a clean Debian root.
#
# Dependencies on Debian's packages (the client libraries, libstdc++, libc) are computed by
# dpkg-shlibdeps (dpkg-dev) from the ELF files; CPack tells ELF files apart with `file`.

# CPack belongs to the top-level project: included from a parent's add_subdirectory(), it would
# take over the parent's `package` target.
if(NOT CMAKE_SOURCE_DIR STREQUAL PROJECT_SOURCE_DIR)
  return()
endif()

set(SQLLOCK_DEB_MAINTAINER "sqllock maintainers <maintainers@sqllock.invalid>"
  CACHE STRING "Maintainer field of the Debian packages (cpack -G DEB)")
set(SQLLOCK_DEB_RELEASE 1 CACHE STRING "Debian revision of the packages: <version>-<release>")

# ---- the runtime package's name, from the SONAME ------------------------------------------------
# libsqllock.so.0.1 → libsqllock0.1; a library name ending in a digit gets a hyphen before the
# SOVERSION (libfoo2.so.1 → libfoo2-1).
get_target_property(_sqllock_soversion sqllock SOVERSION)
get_target_property(_sqllock_output_name sqllock OUTPUT_NAME)
if(NOT _sqllock_soversion)
  message(FATAL_ERROR "cmake/Packaging.cmake: the sqllock target has no SOVERSION, so there is no "
    "SONAME to name the runtime package after")
endif()
if(NOT _sqllock_output_name)
  set(_sqllock_output_name sqllock)
endif()
string(TOLOWER "lib${_sqllock_output_name}" _sqllock_lib_stem)
string(REPLACE "_" "-" _sqllock_lib_stem "${_sqllock_lib_stem}")
if(_sqllock_lib_stem MATCHES "[0-9]$")
  set(SQLLOCK_DEB_RUNTIME_PACKAGE "${_sqllock_lib_stem}-${_sqllock_soversion}")
else()
  set(SQLLOCK_DEB_RUNTIME_PACKAGE "${_sqllock_lib_stem}${_sqllock_soversion}")
endif()
set(SQLLOCK_DEB_DEV_PACKAGE "${_sqllock_lib_stem}-dev")
set(SQLLOCK_DEB_TOOLS_PACKAGE sqllock)
if(NOT SQLLOCK_DEB_RUNTIME_PACKAGE MATCHES "^[a-z0-9][a-z0-9+.-]+$")
  message(FATAL_ERROR "cmake/Packaging.cmake: '${SQLLOCK_DEB_RUNTIME_PACKAGE}' is not a valid Debian "
    "package name")
endif()
set(_sqllock_deb_version "${PROJECT_VERSION}-${SQLLOCK_DEB_RELEASE}")

# ---- the systemd unit (tools) --------------------------------------------------------------------
# docs/sqllock-reaper.service is written for a `cmake --install` into /usr/local; the installed
# copy runs the program from this tree's bin directory (/usr/bin in the package). It is installed
# but not enabled: it needs /etc/sqllock/reaper.env, which only the administrator can write.
if(TARGET sqllock_reaper)
  set(_sqllock_unit_doc ${PROJECT_SOURCE_DIR}/docs/sqllock-reaper.service)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_sqllock_unit_doc})
  file(READ ${_sqllock_unit_doc} _sqllock_unit)
  set(_sqllock_exec_doc "ExecStart=/usr/local/bin/sqllock-reaper ")
  string(FIND "${_sqllock_unit}" "${_sqllock_exec_doc}" _sqllock_at)
  if(_sqllock_at EQUAL -1)
    message(FATAL_ERROR "cmake/Packaging.cmake: docs/sqllock-reaper.service has no line starting "
      "'${_sqllock_exec_doc}' any more; update the substitution here")
  endif()
  string(REPLACE "${_sqllock_exec_doc}" "ExecStart=${CMAKE_INSTALL_FULL_BINDIR}/sqllock-reaper "
    _sqllock_unit "${_sqllock_unit}")
  string(PREPEND _sqllock_unit
    "# Installed by sqllock (ExecStart: the installed program) and not enabled. Of the steps\n"
    "# below, writing /etc/sqllock/reaper.env and `systemctl enable --now` remain; change the\n"
    "# unit with `systemctl edit sqllock-reaper`, not in place.\n")
  # @ONLY and no @VAR@ in the unit: ${SQLLOCK_REAPER_METRICS} stays for systemd to expand.
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/packaging/sqllock-reaper.service
    CONTENT "${_sqllock_unit}" @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/packaging/sqllock-reaper.service
    DESTINATION lib/systemd/system COMPONENT tools)
endif()

# ---- CPack ---------------------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sqllock)
set(CPACK_PACKAGE_CONTACT "${SQLLOCK_DEB_MAINTAINER}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # as Debian ships programs and libraries; RelWithDebInfo is not for .debs
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING IGNORE)  # one package per component
set(CPACK_COMPONENTS_ALL runtime dev)
if(TARGET sqllock_cli OR TARGET sqllock_reaper)
  list(APPEND CPACK_COMPONENTS_ALL tools)
endif()

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <package>_<version>-<release>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE "${SQLLOCK_DEB_RELEASE}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Architecture: CPack asks `dpkg --print-architecture` when it is not set.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)  # no ELF files in it
# The programs need libsqllock, which is in none of the host's packages: dpkg-shlibdeps finds it in
# this build tree (-l), and the package dependency on it is written out below. Its output for the
# libraries it does know (the client libraries, libstdc++, libc) is appended to Depends.
get_target_property(_sqllock_lib_dir sqllock LIBRARY_OUTPUT_DIRECTORY)
if(NOT _sqllock_lib_dir)
  get_target_property(_sqllock_lib_dir sqllock BINARY_DIR)
endif()
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${_sqllock_lib_dir}")
# DEBIAN/shlibs of the runtime package, so that other packages built against it get
# "libsqllock0.1 (>= <version>)" from dpkg-shlibdeps; ldconfig runs in its postinst/postrm.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(_sqllock_summary "distributed locks in PostgreSQL, MySQL/MariaDB or SQLite")
# Extended descriptions: lines of at most 79 characters, as dpkg and apt show them.
string(CONCAT _sqllock_about
  "sqllock gives applications distributed locks stored in the relational\n"
  "database they already run - PostgreSQL, MySQL/MariaDB or SQLite - so no\n"
  "Redis or ZooKeeper is needed: lease locks in a table (reentrant, renewed,\n"
  "with fencing tokens), PostgreSQL advisory locks, MySQL/MariaDB named locks\n"
  "and row locks. A URI picks the SQL dialect and the client library\n"
  "(drivers in this build: ${SQLLOCK_DRIVERS}).\n")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "${SQLLOCK_DEB_RUNTIME_PACKAGE}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
string(CONCAT CPACK_DEBIAN_RUNTIME_DESCRIPTION "${_sqllock_summary} - library\n${_sqllock_about}\n"
  "This package contains the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME "${SQLLOCK_DEB_DEV_PACKAGE}")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${SQLLOCK_DEB_RUNTIME_PACKAGE} (= ${_sqllock_deb_version})")
# Only the adapter headers (<sqllock/adapters/pqxx.hpp>, soci.hpp, mysql.hpp: a lock inside the
# application's own transaction) include a client library's headers; <sqllock/sqllock.hpp> and
# linking libsqllock need none of them. An application that uses an adapter already has that
# library's -dev package, and one that does not would get three client-library stacks (with
# Boost, for Connector/C++) it never includes, as apt installs Recommends by default: Suggests.
set(_sqllock_suggests "")
if(SQLLOCK_HAVE_PQXX)
  list(APPEND _sqllock_suggests libpqxx-dev)
endif()
if(SQLLOCK_HAVE_SOCI)
  list(APPEND _sqllock_suggests libsoci-dev)
endif()
if(SQLLOCK_HAVE_MYSQL)
  list(APPEND _sqllock_suggests libmysqlcppconn-dev)
endif()
list(JOIN _sqllock_suggests ", " CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS)
string(CONCAT CPACK_DEBIAN_DEV_DESCRIPTION "${_sqllock_summary} - development files\n${_sqllock_about}\n"
  "This package contains the C++20 headers, the CMake package\n"
  "(find_package(sqllock), target sqllock::sqllock) and the pkg-config file.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME "${SQLLOCK_DEB_TOOLS_PACKAGE}")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION database)
# What dpkg-shlibdeps would write from the runtime package's shlibs file: any libsqllock of this
# SONAME from this version on (the programs use only the library's public API).
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${SQLLOCK_DEB_RUNTIME_PACKAGE} (>= ${PROJECT_VERSION})")
string(CONCAT CPACK_DEBIAN_TOOLS_DESCRIPTION "${_sqllock_summary} - command-line tools\n${_sqllock_about}\n"
  "This package contains the sqllock command (migrate; run a command under a\n"
  "lock, like flock(1) across hosts; status; release; reap) and the\n"
  "sqllock-reaper daemon with its systemd unit (installed, not enabled).")

# Read by cpack once per generator. For DEB: refuse a tree not configured for /usr, and drop the
# project-wide summary, which CPackDeb would put in front of every package's own description.
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/packaging/CPackProjectConfig.cmake)
file(CONFIGURE OUTPUT ${CPACK_PROJECT_CONFIG_FILE} CONTENT [[
# Generated by cmake/Packaging.cmake.
if(CPACK_GENERATOR STREQUAL "DEB")
  if(NOT "@CMAKE_INSTALL_PREFIX@" MATCHES "^/usr/?$")
    message(FATAL_ERROR "sqllock: this tree installs into @CMAKE_INSTALL_PREFIX@; Debian packages "
      "install into /usr and need a tree configured for it: cmake -S @PROJECT_SOURCE_DIR@ -B DIR "
      "-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr, build it, then cpack -G DEB there")
  endif()
  unset(CPACK_PACKAGE_DESCRIPTION_SUMMARY)
endif()
]] @ONLY)

include(CPack)
