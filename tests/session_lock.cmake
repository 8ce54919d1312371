# advisory_lock (PostgreSQL) and named_lock (MySQL/MariaDB): the contract suites, the
# multi-process suite that runs both, and the transaction-level advisory lock in an application's
# own libpqxx transaction (adapters/pqxx.hpp).
sqllock_add_test(advisory_lock_test SOURCES advisory_lock_test.cpp SERVERS)
sqllock_add_test(named_lock_test SOURCES named_lock_test.cpp SERVERS)
sqllock_add_test(session_lock_process_test SOURCES session_lock_process_test.cpp
 SERVERS PROCESS)
if(SQLLOCK_HAVE_PQXX)
  sqllock_add_test(advisory_pqxx_adapter_test SOURCES advisory_pqxx_adapter_test.cpp
    SERVERS LIBS PkgConfig::SQLLOCK_PQXX)
endif()

# Restarts the test servers (support/server_control): must not share them with other tests, hence
# its own program, run alone (RUN_SERIAL).
sqllock_add_test(session_lock_restart_test SOURCES session_lock_restart_test.cpp SERVERS SERIAL PROCESS)

# Network loss under a pinned session, through a TCP proxy that freezes (support/tcp_proxy).
sqllock_add_test(session_lock_netloss_test SOURCES session_lock_netloss_test.cpp SERVERS PROCESS TIMEOUT 120)
