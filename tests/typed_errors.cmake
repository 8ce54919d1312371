# Typed, retryable errors (sqllock::deadlock through the row-lock API and advisory locks) and
# overflow-safe timed waits of the transaction-level advisory lock, against the private servers.
sqllock_add_test(typed_errors_test SOURCES typed_errors_test.cpp SERVERS)
