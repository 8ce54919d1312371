# sqllock behind PgBouncer in transaction mode (started by scripts/test-servers.sh with the other
# test servers): prepared-statement names, session vs transaction advisory locks, the CLI. The
# table- and row-lock contract suites also run through it (their Pgbouncer instantiations).
if(SQLLOCK_HAVE_PQXX AND SQLLOCK_HAVE_SOCI AND TARGET sqllock_cli)
  sqllock_add_test(pgbouncer_test SOURCES pgbouncer_test.cpp SERVERS PROCESS TIMEOUT 300 LIBS PkgConfig::SQLLOCK_PQXX)
  target_compile_definitions(pgbouncer_test PRIVATE SQLLOCK_CLI="$<TARGET_FILE:sqllock_cli>")
  add_dependencies(pgbouncer_test sqllock_cli)
endif()
