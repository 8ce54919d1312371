sqllock_add_test(table_lock_test SOURCES table_lock_test.cpp support/fresh_database.cpp SERVERS)
sqllock_add_test(table_lock_process_test SOURCES table_lock_process_test.cpp support/fresh_database.cpp support/processes.cpp SERVERS)
sqllock_add_test(table_lock_restart_test SOURCES table_lock_restart_test.cpp support/fresh_database.cpp
                 support/program.cpp SERVERS SERIAL TIMEOUT 600)
