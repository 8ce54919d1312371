# multi_lock: several table locks taken all or none (tests/multi_lock_test.cpp), on every driver ×
# dialect pair, with real processes racing on overlapping sets and `sqllock run --lock a --lock b`.
# The contract every lock kind shares runs for it in tests/contract/.
sqllock_add_test(multi_lock_test SOURCES multi_lock_test.cpp SERVERS PROCESS TIMEOUT 600)
if(TARGET sqllock_cli)
  target_compile_definitions(multi_lock_test PRIVATE SQLLOCK_CLI="$<TARGET_FILE:sqllock_cli>")
  add_dependencies(multi_lock_test sqllock_cli)
endif()
