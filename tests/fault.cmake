# The Jepsen-style fault harness (tests/fault/, docs/reliability.md): one program, run per
# database × lock kind for $SQLLOCK_FAULT_SECONDS (default 60) against a private server it
# starts, restarts and stops itself — never the shared `servers` fixture — plus the negative
# controls, which must make the checkers report violations, and runs on the high-availability
# setups of scripts/ha-servers.sh. Long mode: tests/fault/run-long.sh.
# Its guarded writes go through each database's adapter, as an application's do
# (fault/guarded_write.hpp): it needs all three client libraries.
if(NOT (SQLLOCK_HAVE_PQXX AND SQLLOCK_HAVE_MYSQL AND SQLLOCK_HAVE_SOCI))
  return()
endif()
add_executable(sqllock_fault
  fault/main.cpp fault/config.cpp fault/history.cpp fault/schema.cpp fault/spawn.cpp fault/servers.cpp
  fault/board.cpp fault/locker.cpp fault/rogue_locker.cpp fault/worker.cpp fault/victims.cpp fault/fleet.cpp
  fault/nemesis.cpp fault/checker.cpp fault/controller.cpp fault/semaphore_holder.cpp
  fault/latch_log.cpp fault/latch_worker.cpp fault/latch_check.cpp fault/multi_worker.cpp fault/multi_check.cpp
  fault/holds.cpp fault/queue_log.cpp fault/queue_holder.cpp fault/queue_rogue.cpp fault/queue_check.cpp
  fault/net_link.cpp fault/told_check.cpp fault/told_late.cpp fault/stall_monitor.cpp
  fault/hold_story.cpp fault/guarded_write.cpp fault/guard_check.cpp)
target_include_directories(sqllock_fault PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(sqllock_fault PRIVATE sqllock_build_flags sqllock_test_support PkgConfig::SQLLOCK_PQXX
                                            sqllock_dep_mysqlcppconn sqllock_dep_soci)
# As guard_test: SOCI's inline operators need typeinfo its libraries do not export.
if(SQLLOCK_SANITIZE)
  set_source_files_properties(fault/guarded_write.cpp PROPERTIES COMPILE_OPTIONS -fno-sanitize=vptr)
endif()
sqllock_precompile(sqllock_fault REUSE sqllock_test_support)
target_compile_definitions(sqllock_fault PRIVATE SQLLOCK_SERVERS_SCRIPT="${PROJECT_SOURCE_DIR}/scripts/test-servers.sh"
  SQLLOCK_HA_SCRIPT="${PROJECT_SOURCE_DIR}/scripts/ha-servers.sh")

# fault.<kind>.<database> [args…]: each run takes SQLLOCK_FAULT_SECONDS plus ~6 s of setup and
# checks, mostly waiting (about a third of a core for workers, nemesis and server), so ctest may
# run it beside other tests; it shares no server with them.
# They are among the longest tests and use little CPU: ctest should start them early, beside the
# short tests, not in a row at the end. It orders tests first by how many tests wait for them
# (the shared servers' fixture makes servers.start, then every test that needs the servers, come
# before tests that nothing waits for), then by COST: so servers.stop waits for the fault runs
# too (DEPENDS), which puts them among the tests of the fixture, and their COST puts them first
# there.
function(sqllock_fault_test name)
  add_test(NAME fault.${name} COMMAND sqllock_fault ${ARGN})
  set_tests_properties(fault.${name} PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77 LABELS "fault;process" COST 100)
  set_property(TEST servers.stop APPEND PROPERTY DEPENDS fault.${name})
endfunction()

# The same on a high-availability setup: label `ha` (the quick tier and the sanitizer suite leave
# these out: they run the same client code as the standalone runs, and each costs a cluster
# start), and one at a time (RESOURCE_LOCK ha_cluster, shared with galera_test): several clusters
# starting at once on two cores stretch their failovers and state transfers past the bounds. They
# start before every other test (COST), as the chain of them is the longest part of the run, and
# each counts as three of the tests ctest runs at once (PROCESSORS): at six at a time (the full
# tier) a cluster shares the two cores with three other tests, as it did at four.
function(sqllock_fault_ha_test name)
  sqllock_fault_test(${name} ${ARGN})
  set_tests_properties(fault.${name} PROPERTIES LABELS "fault;process;ha" RESOURCE_LOCK ha_cluster COST 300
                                                PROCESSORS 3)
endfunction()

# fault_repeat_test(<kind>.<database> …): a kind's run on a further database. The sanitizer suite
# leaves these out (label fault_repeat): under the sanitizers each kind runs once and each driver
# (libpqxx on PostgreSQL, Connector/C++ on MariaDB, SOCI on SQLite) under several kinds, the table
# lock on all three and through PgBouncer; the full and quick tiers run every kind on every database.
function(sqllock_fault_repeat_test name)
  sqllock_fault_test(${name} ${ARGN})
  set_tests_properties(fault.${name} PROPERTIES LABELS "fault;process;fault_repeat")
endfunction()

sqllock_fault_test(table.postgresql --database postgresql --kind table)
sqllock_fault_test(table.mariadb --database mariadb --kind table)
sqllock_fault_test(table.sqlite --database sqlite --kind table)
sqllock_fault_test(advisory.postgresql --database postgresql --kind advisory)
sqllock_fault_test(named.mariadb --database mariadb --kind named)
sqllock_fault_test(row.postgresql --database postgresql --kind row)
sqllock_fault_repeat_test(row.mariadb --database mariadb --kind row)
# sqllock::semaphore, 2 permits per name: checked per (name, slot) and for over-commit per name.
sqllock_fault_repeat_test(semaphore.postgresql --database postgresql --kind semaphore --permits 2)
sqllock_fault_test(semaphore.mariadb --database mariadb --kind semaphore --permits 2)
sqllock_fault_repeat_test(semaphore.sqlite --database sqlite --kind semaphore --permits 2)
# sqllock::latch, armed again and again with 8 count-downs: never open before 8 distinct
# participants counted, none counted twice (fault/latch_check.hpp).
sqllock_fault_test(latch.postgresql --database postgresql --kind latch --latch-count 8)
sqllock_fault_repeat_test(latch.mariadb --database mariadb --kind latch --latch-count 8)
sqllock_fault_repeat_test(latch.sqlite --database sqlite --kind latch --latch-count 8)
# sqllock::multi_lock, random sets of 3 of 6 names: the table checks per name, and never a set
# granted in part (fault/multi_check.hpp).
sqllock_fault_repeat_test(multi.postgresql --database postgresql --kind multi --names-per-set 3 --resources 6)
sqllock_fault_repeat_test(multi.mariadb --database mariadb --kind multi --names-per-set 3 --resources 6)
sqllock_fault_test(multi.sqlite --database sqlite --kind multi --names-per-set 3 --resources 6)
# sqllock::fair_lock and sqllock::rw_lock (rw: the write lock one time in three, else the read
# lock), on the server's log of the wait queue: no write hold together with another hold, grants
# in ticket order, no free name with live waiters left waiting (fault/queue_check.hpp).
sqllock_fault_test(fair.postgresql --database postgresql --kind fair)
sqllock_fault_repeat_test(fair.mariadb --database mariadb --kind fair)
sqllock_fault_repeat_test(fair.sqlite --database sqlite --kind fair)
sqllock_fault_repeat_test(rw.postgresql --database postgresql --kind rw)
sqllock_fault_test(rw.mariadb --database mariadb --kind rw)
sqllock_fault_repeat_test(rw.sqlite --database sqlite --kind rw)

# Through PgBouncer (--via pgbouncer): the workers' lock connections go through their proxy (the
# network faults) to the PgBouncer in transaction mode that scripts/test-servers.sh starts in front
# of the run's PostgreSQL, with ?prepare=off; their sections, the reaper, the probes and the checks
# go to PostgreSQL directly. The restarts are PostgreSQL's behind the pooler, a session kill ends
# one of the pooler's server sessions. One run per lock kind sqllock supports behind a
# transaction-mode pooler (not advisory_lock, whose session-level lock is refused or lost there).
# The table run is in the quick tier; the other five only in the full tier (label full_only, which
# the quick tier's presets leave out): six more 20 s runs would add about half a minute to it.
sqllock_fault_test(table.pgbouncer --database postgresql --kind table --via pgbouncer)
foreach(kind semaphore latch multi fair rw)
  set(args)
  if(kind STREQUAL "semaphore")
    set(args --permits 2)
  elseif(kind STREQUAL "latch")
    set(args --latch-count 8)
  elseif(kind STREQUAL "multi")
    set(args --names-per-set 3 --resources 6)
  endif()
  sqllock_fault_test(${kind}.pgbouncer --database postgresql --kind ${kind} --via pgbouncer ${args})
  set_tests_properties(fault.${kind}.pgbouncer PROPERTIES LABELS "fault;process;full_only")
endforeach()

# Negative controls: unsafe peers (tests/fault/rogue_locker.cpp) must be caught, in a
# short run with the faults that expose them. Label `control`: they check the checkers with peers
# that are not sqllock's code, so the sanitizer suite leaves them out.
function(sqllock_fault_control_test name)
  sqllock_fault_test(control.${name} ${ARGN})
  set_tests_properties(fault.control.${name} PROPERTIES LABELS "fault;process;control" COST 200)
endfunction()

sqllock_fault_control_test(unsafe_release.postgresql --database postgresql --kind table --seconds 30
  --resources 1 --control unsafe-release --faults pause-long,pause-xlong --fault-every-ms 2000 --restarts 0 --expect-violation foreign-delete)
sqllock_fault_control_test(client_clock.postgresql --database postgresql --kind table --seconds 20
  --control client-clock --restarts 0 --expect-violation server-overlap)
# One thread per process counts live permits, then inserts a row of its own slot (>= N): research
# T1's semaphore, which the primary key cannot stop. server-overcommit must see N + 1 live permits.
sqllock_fault_control_test(count_then_insert.postgresql --database postgresql --kind semaphore --permits 2
  --seconds 20 --control count-then-insert --restarts 0 --expect-violation server-overcommit)
# One thread per process counts down the naive way (arrival row if missing, then a separate
# decrement) and sends both again after an error or a reply it takes as lost: one participant
# counted twice, so the latch opens one arrival short.
sqllock_fault_control_test(rogue_count_down.postgresql --database postgresql --kind latch --latch-count 8
  --seconds 20 --control rogue-count-down --restarts 0 --expect-violation double-count --expect-violation early-open)
# One thread per process takes its set name by name (autocommit table_locks, unsorted, no wait)
# and releases what it took when a later name is refused: partial-grant must see those attempts.
sqllock_fault_control_test(sequential_multi.postgresql --database postgresql --kind multi --names-per-set 3
  --resources 6 --seconds 20 --control sequential-multi --restarts 0 --expect-violation partial-grant)
# Every thread takes a place in the fair locks' queue (raw SQL, a real ticket) but holds whenever no
# live holder exists, whoever polls first: exclusive, not in ticket order — ticket-order must see it.
sqllock_fault_control_test(unordered_queue.postgresql --database postgresql --kind fair --seconds 20
  --control unordered-queue --restarts 0 --faults crash,pause-short --expect-violation ticket-order)
# One thread per process takes a reader's place and holds at once, ignoring the writers ahead of it
# (sqllock's rw_lock holders around it): write-overlap must see a writer holding with it.
sqllock_fault_control_test(reader_ignores_writer.postgresql --database postgresql --kind rw --seconds 20
  --control reader-ignores-writer --restarts 0 --expect-violation write-overlap)
# One thread per process leaves a place behind after each release that returned ok (nobody holds,
# leaves or renews it; its lease is 3 L): queue-stall must see the name free for longer than its
# bound while waiters queue behind the leaked place, with no failed call or fault to excuse it.
sqllock_fault_control_test(leaked_place.postgresql --database postgresql --kind fair --seconds 20
  --control leaked-place --restarts 0 --faults pause-short --expect-violation queue-stall)
# Every thread holds a table_lock but ignores its lost signal, and learns of a loss only when a
# statement of its own through its lock connections returns (fault/told_late.hpp): the lost signal
# of a renewal that hangs, as it was. Under silent partitions only, told-before-granted must see
# another holder granted the lock before the cut-off one was told. One per server database. 30 s:
# at the start of a full tier on a fresh machine MariaDB answered so slowly (17 stalls, 13.7 s in
# all) that a 20 s run had two partitions and no grant to another holder in either.
foreach(db postgresql mariadb)
  sqllock_fault_control_test(told_on_return.${db} --database ${db} --kind table --seconds 30
    --control told-on-return --restarts 0 --faults net-partition --expect-violation told-before-granted)
endforeach()

# Every leased kind's run above does guarded writes (fault/guarded_write.hpp): 0 stale-guarded-write.
# The same writes without their guard statement (--control unguarded-write) must commit writes after
# the next holder's grant: one control per leased kind on PostgreSQL, and the table lock's on MariaDB,
# SQLite, through PgBouncer and (below) on both clusters. Only pauses past the lease (a lease of 600 ms, paused for 900 ms or
# 1.8 s, one every 600 ms): 4 to 8 such writes in 20 s where 4 of them were tried.
foreach(kind table semaphore multi fair rw)
  set(args --resources 1)
  if(kind STREQUAL "semaphore")
    set(args --resources 1 --permits 2)
  elseif(kind STREQUAL "multi")
    set(args --resources 3 --names-per-set 2)
  endif()
  set(dbs postgresql)
  if(kind STREQUAL "table")
    set(dbs postgresql mariadb sqlite pgbouncer)
  endif()
  foreach(db IN LISTS dbs)
    set(where --database ${db})
    if(db STREQUAL "pgbouncer")
      set(where --database postgresql --via pgbouncer)
    endif()
    sqllock_fault_control_test(unguarded_write.${kind}.${db} ${where} --kind ${kind} ${args} --seconds 20
      --lease-ms 600 --faults pause-long,pause-xlong --fault-every-ms 600 --restarts 0 --control unguarded-write
      --expect-violation stale-guarded-write)
  endforeach()
endforeach()

# High-availability setups (scripts/ha-servers.sh; fault/servers.hpp), each a private cluster
# started for the run (20-50 s more than a standalone server). pg_auto_failover: the primary's
# node is killed once (kill-primary: failover, then the killed node rejoins), on 6 resources so
# that more holders are inside their sections at the kill. Galera: workers spread over the three
# nodes, node 3 killed and restarted once.
sqllock_fault_ha_test(table.pgaf --database postgresql --kind table --setup pgaf --resources 6)
sqllock_fault_ha_test(advisory.pgaf --database postgresql --kind advisory --setup pgaf --resources 6)
sqllock_fault_ha_test(table.galera --database mariadb --kind table --setup galera)
# GET_LOCK and FOR UPDATE are node-local on Galera: every worker's first named and row lock call
# must be refused with not_supported (one cluster, a fleet per kind).
sqllock_fault_ha_test(refusal.galera --database mariadb --kind named,row --setup galera --seconds 30 --expect-refusal)
# Negative control: with ?galera=pinned (the caller's promise that every client of a lock uses
# one node, here broken: the workers are on three nodes) named locks are granted on each node at
# once, and client-overlap must see the two holders.
sqllock_fault_ha_test(control.galera_pinned_named --database mariadb --kind named --setup galera --seconds 20
  --restarts 0 --uri-params galera=pinned --expect-violation client-overlap)
set_tests_properties(fault.control.galera_pinned_named PROPERTIES LABELS "fault;process;ha;control")
# The guarded writes' negative control (above) on each cluster: the table lock on the
# pg_auto_failover pair (one resource) and on the three Galera nodes, no server fault.
foreach(setup pgaf galera)
  set(db postgresql)
  set(args --resources 1)
  if(setup STREQUAL "galera")
    set(db mariadb)
    set(args)
  endif()
  sqllock_fault_ha_test(control.unguarded_write.table.${setup} --database ${db} --kind table --setup ${setup} ${args}
    --seconds 20 --lease-ms 600 --faults pause-long,pause-xlong --fault-every-ms 600 --restarts 0
    --control unguarded-write --expect-violation stale-guarded-write)
  set_tests_properties(fault.control.unguarded_write.table.${setup} PROPERTIES LABELS "fault;process;ha;control")
endforeach()
