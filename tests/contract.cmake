# The lock contract, written once (tests/contract/) and run for every lock kind × target that has
# it, with the kinds behind one interface (support/lock_kinds.hpp) and capability flags.
sqllock_add_test(contract_test SOURCES contract/lock_contract_test.cpp contract/leased_lock_contract_test.cpp SERVERS)
sqllock_add_test(contract_process_test SOURCES contract/lock_process_contract_test.cpp SERVERS PROCESS)
