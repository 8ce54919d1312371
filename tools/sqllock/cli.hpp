// Shared pieces of the sqllock command: exit codes, argument parsing, error reporting.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sqllock::cli {

// Stable exit codes (documented in README.md).
enum exit_code : int {
  exit_ok = 0,
  exit_not_obtained = 1,  // the lock is held elsewhere (or the wait timed out)
  exit_usage = 2,         // bad command line or bad input
  exit_unreachable = 3,   // the database could not be reached
  exit_schema = 4,        // the lock table is missing or from another sqllock version
  exit_lock_lost = 5,     // a held lock was lost while the command ran
  exit_database = 6,      // the database reported another error
  exit_absent = 7,        // `sqllock latch`: no such latch (never created, reaped, or past its ttl)
  exit_internal = 70,     // a bug in sqllock
};

// Thrown for a bad command line; main() prints it with a usage hint and exits 2.
struct usage_error {
  std::string message;
};

// A minimal option parser: --name VALUE, --name=VALUE, and flags. Arguments after "--" are kept
// verbatim in rest().
class args {
 public:
  args(std::vector<std::string> argv) : argv_(std::move(argv)) {}
  // Removes and returns the value of --name (or -s when short_name is given), if present.
  std::optional<std::string> take(std::string_view name, std::string_view short_name = {});
  // Removes --name (or -s) and returns whether it was present.
  bool flag(std::string_view name, std::string_view short_name = {});
  // Remaining arguments after "--" (and removes them).
  std::vector<std::string> rest();
  // Removes and returns every argument left — call it after taking the options — with "--"
  // ending the options (what follows it is taken verbatim, e.g. a name that starts with '-').
  // Throws usage_error for a leftover option, i.e. one the command does not know.
  std::vector<std::string> positionals();
  // Throws usage_error if anything was not consumed.
  void expect_done() const;

 private:
  std::vector<std::string> argv_;
};

// The database URI from --db or $SQLLOCK_DB; throws usage_error when neither is given.
std::string database_uri(args& a);

// Runs `body`, mapping sqllock errors to a message on stderr and an exit code.
int run_reporting_errors(const std::function<int()>& body);

// Subcommands. Each takes the arguments after its name.
int cmd_migrate(args a);
int cmd_run(args a);
int cmd_status(args a);   // cmd_status.cpp
int cmd_release(args a);  // cmd_release.cpp
int cmd_reap(args a);     // cmd_reap.cpp
int cmd_latch(args a);    // cmd_latch.cpp

}  // namespace sqllock::cli
