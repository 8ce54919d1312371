// sqllock — distributed locks in the database you already run, from the command line.
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"

namespace {

constexpr std::string_view kUsage =
    "usage: sqllock <command> [options]\n"
    "\n"
    "Commands:\n"
    "  migrate   create or upgrade the lock table\n"
    "  run       run a command while holding a lock, like flock(1) across hosts\n"
    "  status    list held locks (and PostgreSQL advisory locks)\n"
    "  release   delete a stuck lock by force (--force)\n"
    "  reap      delete lock rows whose lease ran out, once\n"
    "  latch     a count-down latch: create, count-down, wait, status\n"
    "\n"
    "Every command takes --db URI (default: $SQLLOCK_DB) and -h, --help.\n"
    "Exit codes: 0 ok, 1 lock not obtained, 2 usage error, 3 database unreachable,\n"
    "4 schema missing or mismatched, 5 lock lost, 6 other database error, 7 latch absent,\n"
    "70 internal error.\n"
    "`run` otherwise exits with the command's status (126 not executable, 127 not found,\n"
    "128+N killed by signal N). `status --lock` and `release` exit 1 when the lock has no row.\n"
    "See sqllock(1).\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace sqllock::cli;
  std::vector<std::string> rest(argv + 1, argv + argc);
  if (rest.empty() || rest[0] == "--help" || rest[0] == "-h" || rest[0] == "help") {
    std::cout << kUsage;
    return rest.empty() ? exit_usage : exit_ok;
  }
  const std::string command = rest[0];
  rest.erase(rest.begin());
  return run_reporting_errors([&]() -> int {
    if (command == "migrate") return cmd_migrate(args(rest));
    if (command == "run") return cmd_run(args(rest));
    if (command == "status") return cmd_status(args(rest));
    if (command == "release") return cmd_release(args(rest));
    if (command == "reap") return cmd_reap(args(rest));
    if (command == "latch") return cmd_latch(args(rest));
    throw usage_error{"unknown command '" + command + "'"};
  });
}
