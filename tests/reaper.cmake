# The reaper and the operator functions (status, forced release) of the library, on every
# driver × dialect pair.
sqllock_add_test(reaper_test SOURCES reaper_test.cpp
 SERVERS PROCESS)
sqllock_add_test(status_test SOURCES status_test.cpp SERVERS)

# The operator commands and sqllock-reaper as programs. Only when the tools are built.
if(TARGET sqllock_cli AND TARGET sqllock_reaper)
  sqllock_add_test(admin_cli_test SOURCES admin_cli_test.cpp
 SERVERS PROCESS TIMEOUT 600)
  target_compile_definitions(admin_cli_test PRIVATE SQLLOCK_CLI="$<TARGET_FILE:sqllock_cli>")
  add_dependencies(admin_cli_test sqllock_cli)

  # Includes the command lines shipped in docs/sqllock-reaper.service and docs/operations.md.
  sqllock_add_test(reaper_cli_test SOURCES reaper_cli_test.cpp
 SERVERS PROCESS TIMEOUT 600)
  target_compile_definitions(reaper_cli_test PRIVATE SQLLOCK_REAPER="$<TARGET_FILE:sqllock_reaper>"
                             SQLLOCK_DOCS_DIR="${PROJECT_SOURCE_DIR}/docs")
  add_dependencies(reaper_cli_test sqllock_reaper)

  # Restarts and stops the test servers: run alone.
  sqllock_add_test(reaper_restart_test SOURCES reaper_restart_test.cpp
 SERVERS SERIAL PROCESS TIMEOUT 900)
  target_compile_definitions(reaper_restart_test PRIVATE SQLLOCK_REAPER="$<TARGET_FILE:sqllock_reaper>")
  add_dependencies(reaper_restart_test sqllock_reaper)
endif()
