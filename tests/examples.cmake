# The programs of examples/, run the way their READMEs say against the test databases, with
# checks of what each example promises (examples/run-example-tests.sh describes every test):
#   examples.cron.<db>            two overlapping runs of the crontab line, then three at once
#   examples.leader_election.<db> three workers; the leader is SIGKILLed, its successor's lock
#                                 released by force
#   examples.money_transfer.<how> four processes transferring at once (PostgreSQL)
#   examples.reaper.<db>          the reaper's crontab line on a database with crashed holders
# The systemd unit's ExecStart (docs/sqllock-reaper.service, which examples/reaper points to) is
# run by reaper_cli_test (TheShippedSystemdUnitCommandLineWorks), not again here.
if(SQLLOCK_BUILD_EXAMPLES AND TARGET sqllock_cli AND TARGET sqllock_reaper)
  set(_example_env "SQLLOCK_CLI=$<TARGET_FILE:sqllock_cli>" "SQLLOCK_REAPER=$<TARGET_FILE:sqllock_reaper>")
  if(TARGET example_leader_election)
    list(APPEND _example_env "LEADER_ELECTION=$<TARGET_FILE:example_leader_election>")
  endif()
  if(TARGET example_money_transfer)
    list(APPEND _example_env "MONEY_TRANSFER=$<TARGET_FILE:example_money_transfer>")
  endif()
  if(SQLLOCK_SANITIZE)
    list(APPEND _example_env SQLLOCK_TEST_SANITIZED=1)  # upper time bounds stretch 3x
  endif()

  # sqllock_example_test(<name> <test> <database>): examples.<name>, run-example-tests.sh <test> <database>.
  function(sqllock_example_test name test database)
    add_test(NAME examples.${name}
      COMMAND ${PROJECT_SOURCE_DIR}/examples/run-example-tests.sh ${test} ${database} ${SQLLOCK_TEST_STATE_DIR}/env)
    set_tests_properties(examples.${name} PROPERTIES
      LABELS "integration;examples" TIMEOUT 60 SKIP_RETURN_CODE 77 ENVIRONMENT "${_example_env}" COST 50)
    if(NOT database STREQUAL "sqlite")
      set_tests_properties(examples.${name} PROPERTIES FIXTURES_REQUIRED servers)
    endif()
  endfunction()

  foreach(_db postgresql mariadb sqlite)
    sqllock_example_test(cron.${_db} cron ${_db})
    sqllock_example_test(reaper.${_db} reaper ${_db})
    if(TARGET example_leader_election)
      sqllock_example_test(leader_election.${_db} leader-election ${_db})
    endif()
  endforeach()
  if(TARGET example_money_transfer)
    foreach(_how lock_row with_row_lock mixed)
      sqllock_example_test(money_transfer.${_how} money-transfer-${_how} postgresql)
    endforeach()
  endif()
endif()
