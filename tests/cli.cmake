# The sqllock command, tested as a program. Only when the tools are built.
if(TARGET sqllock_cli)
  # Duration parsing of `sqllock run` (--ttl, --wait): a unit test over the tool's own source.
  sqllock_add_test(duration_test SOURCES duration_test.cpp ${PROJECT_SOURCE_DIR}/tools/sqllock/duration.cpp)
  target_include_directories(duration_test PRIVATE ${PROJECT_SOURCE_DIR}/tools/sqllock)
  # The environment `sqllock run` gives its command (SQLLOCK_FENCE …): a unit test over its source.
  sqllock_add_test(run_env_test SOURCES run_env_test.cpp ${PROJECT_SOURCE_DIR}/tools/sqllock/run_env.cpp)
  target_include_directories(run_env_test PRIVATE ${PROJECT_SOURCE_DIR}/tools/sqllock)

  # `sqllock run` as real processes against every driver × dialect pair.
  sqllock_add_test(cli_run_test SOURCES cli_run_test.cpp SERVERS PROCESS TIMEOUT 600)
  target_compile_definitions(cli_run_test PRIVATE SQLLOCK_CLI="$<TARGET_FILE:sqllock_cli>")
  add_dependencies(cli_run_test sqllock_cli)

  # What `sqllock run` tells its command (SQLLOCK_FENCE …) and how it stops it when the lock is lost.
  sqllock_add_test(cli_run_fence_test SOURCES cli_run_fence_test.cpp SERVERS PROCESS TIMEOUT 300)
  target_compile_definitions(cli_run_fence_test PRIVATE SQLLOCK_CLI="$<TARGET_FILE:sqllock_cli>")
  add_dependencies(cli_run_fence_test sqllock_cli)
  # README's guarded write from a shell command (psql, mariadb) calling the SQL guard: refused and
  # not committed after the holder was paused past its lease; committed without the guard.
  sqllock_add_test(cli_run_guard_test SOURCES cli_run_guard_test.cpp SERVERS PROCESS TIMEOUT 300)
  target_compile_definitions(cli_run_guard_test PRIVATE SQLLOCK_CLI="$<TARGET_FILE:sqllock_cli>")
  add_dependencies(cli_run_guard_test sqllock_cli)
  # `sqllock run --wait` through a frozen network (support/tcp_proxy): ends within its bounds.
  sqllock_add_test(cli_bound_test SOURCES cli_bound_test.cpp SERVERS PROCESS TIMEOUT 120)
  target_compile_definitions(cli_bound_test PRIVATE SQLLOCK_CLI="$<TARGET_FILE:sqllock_cli>")
  add_dependencies(cli_bound_test sqllock_cli)
endif()
