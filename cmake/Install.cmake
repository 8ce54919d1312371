# install() rules and the exported CMake package: find_package(sqllock CONFIG) → sqllock::sqllock.
# Components: runtime (the shared library), dev (headers, CMake package, sqllock.pc) — the tools'
# rules (COMPONENT tools) are in tools/ and man/. cmake/Packaging.cmake makes one .deb of each.
include(CMakePackageConfigHelpers)
set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/sqllock)

install(TARGETS sqllock EXPORT sqllockTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Headers: the adapter of a driver only when that driver is built (its functions are in the
# library only then).
install(DIRECTORY include/sqllock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  PATTERN adapters EXCLUDE)
foreach(_driver pqxx mysql soci)
  string(TOUPPER ${_driver} _upper)
  if(SQLLOCK_HAVE_${_upper})
    install(FILES include/sqllock/adapters/${_driver}.hpp
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sqllock/adapters COMPONENT dev)
  endif()
endforeach()

# The CMake package; its components are the built drivers (sqllockConfig.cmake.in).
install(EXPORT sqllockTargets NAMESPACE sqllock:: FILE sqllockTargets.cmake DESTINATION ${_cmake_dir}
  COMPONENT dev)
configure_package_config_file(cmake/sqllockConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/sqllockConfig.cmake
  INSTALL_DESTINATION ${_cmake_dir})
# 0.x: a new minor version may change the API and ABI (the SONAME says so too), so only the same
# minor version is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/sqllockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sqllockConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/sqllockConfigVersion.cmake
  DESTINATION ${_cmake_dir} COMPONENT dev)

# pkg-config. Relocatable — every path relative to where the .pc file is installed — except in a
# tree for /usr (the Debian packages): there the paths are plain, so pkg-config recognises
# /usr/include and /usr/lib/<multiarch> as the system's and leaves them out of the flags.
set(_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$")
  set(SQLLOCK_PC_PREFIX /usr)
else()
  file(RELATIVE_PATH _pc_to_prefix /root/${_pc_dir} /root)
  string(REGEX REPLACE "/$" "" _pc_to_prefix "${_pc_to_prefix}")
  set(SQLLOCK_PC_PREFIX "\${pcfiledir}/${_pc_to_prefix}")
endif()
configure_file(cmake/sqllock.pc.in ${CMAKE_CURRENT_BINARY_DIR}/sqllock.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sqllock.pc DESTINATION ${_pc_dir} COMPONENT dev)
