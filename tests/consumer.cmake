# An application's three ways to take sqllock in, each built and run against SQLite and the test
# PostgreSQL server by scripts/check-consumer.sh:
#   consumer.find_package  `cmake --install` this build into a temporary prefix, then build
#                          tests/consumer with find_package(sqllock CONFIG COMPONENTS …); a missing
#                          driver component fails clearly; the installed program runs by RPATH
#   consumer.pkg_config    the same install, compiled with `pkg-config --cflags --libs sqllock`
#   consumer.subdirectory  tests/consumer/subdirectory vendors this checkout with add_subdirectory()
#                          and fails if sqllock sets anything global or builds its tools or tests;
#                          that build lacks Connector/C++, and installed, find_package(sqllock
#                          COMPONENTS mysql) must fail with sqllock's message
# The installs need the shared library's install rules; add_subdirectory() compiles the library
# once more, so it runs in the default build only (an ASan build checks no CMake behaviour).
if(BUILD_SHARED_LIBS AND SQLLOCK_INSTALL)
  set(_modes find_package pkg-config)
  if(NOT SQLLOCK_SANITIZE)
    list(APPEND _modes subdirectory)
  endif()
  foreach(_mode IN LISTS _modes)
    string(REPLACE "-" "_" _name ${_mode})
    add_test(NAME consumer.${_name}
      COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-consumer.sh ${_mode} ${PROJECT_BINARY_DIR}
              ${CMAKE_CURRENT_BINARY_DIR}/consumer-${_name})
    set_tests_properties(consumer.${_name} PROPERTIES TIMEOUT 900 FIXTURES_REQUIRED servers
      ENVIRONMENT "SQLLOCK_TEST_ENV_FILE=${SQLLOCK_TEST_STATE_DIR}/env" LABELS "integration;consumer")
  endforeach()
  if(TEST consumer.subdirectory)
    # It compiles the library again, at the lowest CPU priority (nice 19, scripts/check-consumer.sh)
    # so that no timing test beside it starves; it is the longest test, so ctest starts it first
    # (COST: ctest runs costlier tests first when it has no timings of an earlier run).
    set_tests_properties(consumer.subdirectory PROPERTIES COST 1000)
  endif()
endif()
