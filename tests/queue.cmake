# The wait queue's SQL (src/dialect/queue_sql.*, migration 0005) as raw statements on every target:
# enqueue, tickets, the check's verdicts, release, leave, renewal, and processes enqueuing at once
# (tests/queue_sql_test.cpp).
sqllock_add_test(queue_sql_test SOURCES queue_sql_test.cpp SERVERS PROCESS)
