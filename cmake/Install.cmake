# install() rules and the exported CMake package: find_package(sqllock CONFIG) → sqllock::sqllock.
include(CMakePackageConfigHelpers)
install(TARGETS sqllock EXPORT sqllockTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/sqllock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT sqllockTargets NAMESPACE sqllock:: FILE sqllockTargets.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sqllock)
configure_package_config_file(cmake/sqllockConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/sqllockConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sqllock)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/sqllockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sqllockConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/sqllockConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sqllock)
