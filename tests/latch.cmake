# sqllock::latch: arming, count-downs, participants, waits, ttl, bad input, the reaper's part, and
# real processes counting down and waiting at once (tests/latch_test.cpp); the `sqllock latch`
# commands as a program (tests/latch_cli_test.cpp).
sqllock_add_test(latch_test SOURCES latch_test.cpp SERVERS PROCESS TIMEOUT 600)

if(TARGET sqllock_cli)
  sqllock_add_test(latch_cli_test SOURCES latch_cli_test.cpp SERVERS PROCESS TIMEOUT 600)
  target_compile_definitions(latch_cli_test PRIVATE SQLLOCK_CLI="$<TARGET_FILE:sqllock_cli>")
  add_dependencies(latch_cli_test sqllock_cli)
endif()
