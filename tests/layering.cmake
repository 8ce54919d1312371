# The layers of src/ (src/CMakeLists.txt) are enforced by each layer's include root. These tests
# compile two probes with the driver layer's root, as the build compiles a driver file: an include
# of a core header must fail to compile, and the control, which includes only common/ and driver/
# headers, must compile.
foreach(_probe IN ITEMS upward_include downward_include)
  add_test(NAME layering.driver.${_probe}
    COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only
            -I${SQLLOCK_LAYER_ROOT_driver} -I${PROJECT_SOURCE_DIR}/include
            ${CMAKE_CURRENT_SOURCE_DIR}/layering/${_probe}.cpp)
  set_tests_properties(layering.driver.${_probe} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
# It must fail for the right reason: the core header is not on the driver's include path (GCC
# and Clang say so in their own words).
set_tests_properties(layering.driver.upward_include PROPERTIES
  PASS_REGULAR_EXPRESSION "core/lease/table_store\\.hpp: No such file or directory;'core/lease/table_store\\.hpp' file not found")
