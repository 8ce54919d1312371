# advisory_lock (PostgreSQL) and named_lock (MySQL/MariaDB): the contract suites, the
# multi-process suite that runs both, and the transaction-level advisory lock in an application's
# own libpqxx transaction (adapters/pqxx.hpp).
sqllock_add_test(advisory_lock_test SOURCES advisory_lock_test.cpp SERVERS)
sqllock_add_test(named_lock_test SOURCES named_lock_test.cpp SERVERS)
sqllock_add_test(session_lock_process_test SOURCES session_lock_process_test.cpp
 SERVERS)
if(SQLLOCK_HAVE_PQXX)
  sqllock_add_test(advisory_pqxx_adapter_test SOURCES advisory_pqxx_adapter_test.cpp
    SERVERS LIBS PkgConfig::SQLLOCK_PQXX)
endif()

# Restarts the test servers: must not share them with other tests, hence its own program, run
# alone (RUN_SERIAL), not through sqllock_add_test.
add_executable(session_lock_restart_test session_lock_restart_test.cpp)
target_include_directories(session_lock_restart_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(session_lock_restart_test PRIVATE sqllock_test_support GTest::gtest_main sqllock_build_flags)
target_compile_definitions(session_lock_restart_test PRIVATE
  SQLLOCK_TEST_DEFAULT_ENV_FILE="${SQLLOCK_TEST_STATE_DIR}/env")
gtest_discover_tests(session_lock_restart_test DISCOVERY_TIMEOUT 30
  PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE FIXTURES_REQUIRED servers)

# Network loss under a pinned session, through a TCP proxy that freezes (support/tcp_proxy).
sqllock_add_test(session_lock_netloss_test SOURCES session_lock_netloss_test.cpp SERVERS TIMEOUT 120)
