# sqllock::semaphore: permits, leases, fences per slot, waiting, processes (tests/semaphore_test.cpp).
sqllock_add_test(semaphore_test SOURCES semaphore_test.cpp SERVERS PROCESS)
