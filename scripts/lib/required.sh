# Sourced by the test scripts (test-servers.sh, check-consumer.sh, check-packages.sh,
# examples/run-example-tests.sh) to decide what a missing server, tool or archive means.
#
# required: true when CI or SQLLOCK_TEST_REQUIRE_SERVERS is set to anything but empty, 0 or
# false. Then what a test needs must be there, and its absence fails the test instead of
# skipping it.
required() {
  local v
  for v in "${CI:-}" "${SQLLOCK_TEST_REQUIRE_SERVERS:-}"; do
    [[ -n "$v" && "$v" != 0 && "$v" != false ]] && return 0
  done
  return 1
}
