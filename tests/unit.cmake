# Unit tests of the core's timing rules — lease renewal and orphan deletion, loss at the lease
# deadline, the bookkeeping behind the GREATEST rule, the keepalive's 800 ms verdict and its
# reprieve, backoff, a permit's release rule, the reset of a named lock's session after an unclear
# failure, the refusal of a sliced wait in a caller's MySQL transaction — on a fake clock
# (tests/unit/fake_clock.hpp) and a scripted fake connection (tests/support/fake_connection.*).
# No server, no subprocess: `ctest -L unit` runs them in seconds.
sqllock_add_test(core_timing_unit_test
  SOURCES unit/lease_unit_test.cpp unit/keepalive_unit_test.cpp unit/permit_unit_test.cpp
    unit/caller_transaction_unit_test.cpp unit/named_lock_unit_test.cpp unit/advisory_lock_unit_test.cpp
    unit/queue_pace_unit_test.cpp support/fake_connection.cpp
  TIMEOUT 60)

# The test proxy of the network-loss tests and the fault harness (support/tcp_proxy): delays,
# stalls and partitions, against an echo server on a loopback port. No database.
sqllock_add_test(tcp_proxy_test SOURCES tcp_proxy_test.cpp TIMEOUT 60)
# The statement timer that cuts off a statement past its bound, and how a statement's bound is
# computed (driver/statement_timer.hpp, driver/statement_bound.hpp): explicit times, socketpairs.
sqllock_add_test(statement_timer_unit_test SOURCES unit/statement_timer_unit_test.cpp TIMEOUT 60)
