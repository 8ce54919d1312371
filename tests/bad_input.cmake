# Bad input (issue 7): hostile and out-of-range names, durations, options, table names and URIs
# through the public API and the `sqllock` command, on every driver × dialect pair. Every test
# name contains `bad_input` (the suites are instantiated as bad_input/…).
sqllock_add_test(bad_input_names_test SOURCES bad_input_names_test.cpp SERVERS TIMEOUT 120)
sqllock_add_test(bad_input_options_test SOURCES bad_input_options_test.cpp SERVERS TIMEOUT 120)
sqllock_add_test(bad_input_release_test SOURCES bad_input_release_test.cpp SERVERS TIMEOUT 120)
if(TARGET sqllock_cli)
  sqllock_add_test(bad_input_cli_test SOURCES bad_input_cli_test.cpp SERVERS PROCESS TIMEOUT 180)
  target_compile_definitions(bad_input_cli_test PRIVATE SQLLOCK_CLI="$<TARGET_FILE:sqllock_cli>")
  add_dependencies(bad_input_cli_test sqllock_cli)
endif()
