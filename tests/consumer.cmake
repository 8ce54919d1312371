# consumer.find_package: `cmake --install` this build into a temporary prefix, then configure,
# build and run tests/consumer against it — proves find_package(sqllock) and sqllock::sqllock
# work for an application (headers installed, exported target complete, library loadable).
add_test(NAME consumer.find_package
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-consumer.sh ${PROJECT_BINARY_DIR}
          ${CMAKE_CURRENT_BINARY_DIR}/consumer-check)
set_tests_properties(consumer.find_package PROPERTIES TIMEOUT 600)
