# package.deb: the Debian packages of cmake/Packaging.cmake, built with cpack and installed with apt
# into a clean Debian root (debootstrap), where the programs run and a program is compiled against
# the -dev package (scripts/check-packages.sh). Needs root and the Debian archive, else skipped
# (77) — or failed under CI / SQLLOCK_TEST_REQUIRE_SERVERS. The debootstrap result is kept in
# package-check/debootstrap-cache (SQLLOCK_PKG_ROOT_CACHE= disables that).
# Only for a tree that would be packaged as it is: shared, not sanitized, installing into /usr.
# (scripts/test.sh runs the script itself on its RelWithDebInfo tree, which it configures for /usr;
# given any other tree, the script builds a /usr tree of its own, which takes minutes.)
if(BUILD_SHARED_LIBS AND SQLLOCK_INSTALL AND NOT SQLLOCK_SANITIZE AND CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$")
  add_test(NAME package.deb
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-packages.sh ${PROJECT_BINARY_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/package-check)
  set_tests_properties(package.deb PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS "package;process")
endif()
