# compose.config: docker-compose.yml (servers for running the tests against containers) is valid
# and agrees with the SQLLOCK_TEST_*_URI values its comment documents. See scripts/check-compose.sh
# for which checker runs (docker-compose if installed, else python3 + PyYAML, else a text check).
add_test(NAME compose.config
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-compose.sh ${PROJECT_SOURCE_DIR}/docker-compose.yml)
set_tests_properties(compose.config PROPERTIES TIMEOUT 60 LABELS "config;process")
