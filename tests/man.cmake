# man.sqllock, man.sqllock_reaper: the man pages in man/ document exactly the options that
# `sqllock [COMMAND] --help` and `sqllock-reaper --help` list, and groff formats them without a
# warning (scripts/check-man.sh; needs groff, from groff-base). No database, but not `unit`:
# the script runs the built programs (`sqllock CMD --help` for every command) and groff, a few
# seconds of subprocesses, hence label `process`.
if(TARGET sqllock_cli AND TARGET sqllock_reaper)
  foreach(_program IN ITEMS sqllock sqllock-reaper)
    string(REPLACE "-" "_" _test ${_program})
    add_test(NAME man.${_test}
      COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-man.sh --only ${_program}
              $<TARGET_FILE:sqllock_cli> $<TARGET_FILE:sqllock_reaper> ${PROJECT_SOURCE_DIR}/man)
    set_tests_properties(man.${_test} PROPERTIES LABELS process TIMEOUT 120)
  endforeach()
endif()
