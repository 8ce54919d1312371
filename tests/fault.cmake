# The Jepsen-style fault harness (tests/fault/, docs/reliability.md): one program, run per
# database × lock kind for $SQLLOCK_FAULT_SECONDS (default 60) against a private server it
# starts, restarts and stops itself — never the shared `servers` fixture — plus the negative
# controls, which must make the checkers report violations. Long mode: tests/fault/run-long.sh.
add_executable(sqllock_fault
  fault/main.cpp fault/config.cpp fault/history.cpp fault/schema.cpp fault/spawn.cpp fault/servers.cpp
  fault/board.cpp fault/locker.cpp fault/rogue_locker.cpp fault/worker.cpp fault/victims.cpp fault/fleet.cpp
  fault/nemesis.cpp fault/checker.cpp fault/controller.cpp)
target_include_directories(sqllock_fault PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(sqllock_fault PRIVATE sqllock_test_support sqllock_build_flags)
target_compile_definitions(sqllock_fault PRIVATE SQLLOCK_SERVERS_SCRIPT="${PROJECT_SOURCE_DIR}/scripts/test-servers.sh")

# fault.<kind>.<database> [args…]: each run takes SQLLOCK_FAULT_SECONDS plus ~6 s of setup and
# checks, mostly waiting (about a third of a core for workers, nemesis and server), so ctest may
# run it beside other tests; it shares no server with them.
function(sqllock_fault_test name)
  add_test(NAME fault.${name} COMMAND sqllock_fault ${ARGN})
  set_tests_properties(fault.${name} PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
endfunction()

sqllock_fault_test(table.postgresql --database postgresql --kind table)
sqllock_fault_test(table.mariadb --database mariadb --kind table)
sqllock_fault_test(table.sqlite --database sqlite --kind table)
sqllock_fault_test(advisory.postgresql --database postgresql --kind advisory)
sqllock_fault_test(named.mariadb --database mariadb --kind named)
sqllock_fault_test(row.postgresql --database postgresql --kind row)
sqllock_fault_test(row.mariadb --database mariadb --kind row)

# Negative controls: unsafe peers (tests/fault/locker.cpp, rogue_locker.cpp) must be caught, in a
# short run with the faults that expose them.
sqllock_fault_test(control.unsafe_release.postgresql --database postgresql --kind table --seconds 30
  --resources 1 --control unsafe-release --faults pause-long,pause-xlong --fault-every-ms 2000 --restarts 0 --expect-violation foreign-delete)
sqllock_fault_test(control.client_clock.postgresql --database postgresql --kind table --seconds 20
  --control client-clock --restarts 0 --expect-violation server-overlap)
