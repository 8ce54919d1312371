# Galera: named_lock and row locks refuse a multi-node MariaDB Galera cluster, where GET_LOCK and
# FOR UPDATE are node-local (src/core/handle/galera_guard.*).
#
# galera_unit_test: the verdict, the message and when the server is asked; no server.
sqllock_add_test(galera_unit_test SOURCES galera_unit_test.cpp)

# galera_test: against a private three-node cluster (fixture `galera`: scripts/ha-servers.sh
# start-galera writes DIR/env with SQLLOCK_TEST_GALERA_URI_1..3), the refusals and the opt-in on
# every node, and table_lock from processes on different nodes, also across a kill -9 of node 3.
# The fixture's setup fails when servers are required (CI, SQLLOCK_TEST_REQUIRE_SERVERS) and the
# cluster cannot be started; otherwise the script may leave the URIs out and the tests skip.
# The tests share the cluster and one of them kills a node: they run one at a time
# (RESOURCE_LOCK), though beside other suites.
set(SQLLOCK_GALERA_STATE_DIR ${CMAKE_CURRENT_BINARY_DIR}/galera-servers)
set(_ha_servers ${PROJECT_SOURCE_DIR}/scripts/ha-servers.sh)
add_test(NAME galera.start COMMAND ${_ha_servers} start-galera ${SQLLOCK_GALERA_STATE_DIR})
add_test(NAME galera.stop COMMAND ${_ha_servers} stop ${SQLLOCK_GALERA_STATE_DIR})
# PROCESSORS 3, as the HA fault runs (tests/fault.cmake): a cluster shares the cores with at most
# three other tests.
set_tests_properties(galera.start PROPERTIES FIXTURES_SETUP galera TIMEOUT 240 LABELS "integration;galera;ha"
                                             PROCESSORS 3)
set_tests_properties(galera.stop PROPERTIES FIXTURES_CLEANUP galera TIMEOUT 120 LABELS "integration;galera;ha")

if(SQLLOCK_HAVE_MYSQL AND SQLLOCK_HAVE_SOCI)
  add_executable(galera_test galera_test.cpp)
  target_include_directories(galera_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
  # The adapters' lock_row needs the client libraries, as in an application.
  target_link_libraries(galera_test PRIVATE sqllock_build_flags sqllock_test_support GTest::gtest_main
    sqllock_dep_mysqlcppconn sqllock_dep_soci)
  sqllock_precompile(galera_test REUSE sqllock_test_support)
  target_compile_definitions(galera_test PRIVATE
    SQLLOCK_HA_SERVERS_SCRIPT="${_ha_servers}" SQLLOCK_GALERA_STATE_DIR="${SQLLOCK_GALERA_STATE_DIR}")
  if(SQLLOCK_SANITIZE)
    # As row_lock_adapter_test: SOCI's inline operators need typeinfo its libraries do not export.
    set_source_files_properties(galera_test.cpp PROPERTIES COMPILE_OPTIONS -fno-sanitize=vptr)
  endif()
  gtest_discover_tests(galera_test DISCOVERY_TIMEOUT 30
    PROPERTIES TIMEOUT 180 FIXTURES_REQUIRED galera RESOURCE_LOCK ha_cluster PROCESSORS 3
               ENVIRONMENT "SQLLOCK_TEST_ENV_FILE=${SQLLOCK_GALERA_STATE_DIR}/env")
  sqllock_label_tests(galera_test integration galera ha process)
endif()
