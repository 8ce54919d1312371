# Statement bounds on a silently cut network (driver/statement_timer.hpp): each server target
# through a TCP proxy that freezes (support/tcp_proxy). A few seconds per case.
sqllock_add_test(statement_bound_test SOURCES statement_bound_test.cpp SERVERS PROCESS TIMEOUT 120)

# What the watchdog and the keepalive send periodically is prepared at connection open.
sqllock_add_test(periodic_statements_test SOURCES periodic_statements_test.cpp SERVERS)
