# Least privilege: the runtime role the lock suites connect as cannot change the schema, and
# migrating with it fails clearly (tests/privilege_test.cpp; roles from scripts/test-servers.sh).
sqllock_add_test(privilege_test SOURCES privilege_test.cpp SERVERS PROCESS)
if(TARGET sqllock_cli)
  target_compile_definitions(privilege_test PRIVATE SQLLOCK_CLI="$<TARGET_FILE:sqllock_cli>")
  add_dependencies(privilege_test sqllock_cli)
endif()
