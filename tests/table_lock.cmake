sqllock_add_test(table_lock_test SOURCES table_lock_test.cpp SERVERS)
sqllock_add_test(table_lock_restart_test SOURCES table_lock_restart_test.cpp
 SERVERS SERIAL PROCESS TIMEOUT 600)
