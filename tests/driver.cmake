# The driver seam's conformance suite, run against every driver × dialect pair.
sqllock_add_test(driver_conformance_test SOURCES driver_conformance_test.cpp SERVERS PROCESS)
