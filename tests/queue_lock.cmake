# sqllock::fair_lock and sqllock::rw_lock: arrival order, places that outlive their ttl or drop out,
# readers and writers without starvation, downgrade and upgrade, real processes (tests/queue_lock_test.cpp).
sqllock_add_test(queue_lock_test SOURCES queue_lock_test.cpp SERVERS PROCESS)
