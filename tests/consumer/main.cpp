// A program outside sqllock's build that uses sqllock the way an application does: through the
// installed CMake package, through pkg-config, or through add_subdirectory() (scripts/
// check-consumer.sh builds it each way). Only the public headers and the library's exported
// symbols are reachable, so this also proves the exported ABI is complete: every call below and
// every exception type caught by type must resolve against libsqllock.
//
// Usage: consumer URI…   For each database: migrate, take a table lock, see a second handle
// refused while it is held and granted after the release. Exit 0 when every check passed.
#include <chrono>
#include <exception>
#include <iostream>
#include <mutex>
#include <string>

#include <sqllock/sqllock.hpp>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok:   " : "FAIL: ") << what << "\n";
  if (!ok) ++failures;
}

void exercise(const std::string& uri) {
  sqllock::database db(uri);
  std::cout << "== " << db.display_uri() << " (dialect " << sqllock::to_string(db.dialect()) << ", driver "
            << db.driver_name() << ")\n";
  const auto migrated = sqllock::migrate(db);
  check(migrated.version > 0, "migrate reaches a schema version");

  // Options by designated initializer, as applications write them: the option structs must
  // compile warning-free this way under -Wextra -Werror (no missing-field-initializers).
  sqllock::database other(uri, {.pool_size = 2});  // a second handle: another owner, like another process
  sqllock::table_lock mine(db, "consumer-check", {.ttl = std::chrono::seconds(20)});
  sqllock::table_lock theirs(other, "consumer-check", {.ttl = std::chrono::seconds(20), .auto_renew = true});
  [[maybe_unused]] const sqllock::session_lock_options session{.keepalive = std::chrono::seconds(2)};
  [[maybe_unused]] const sqllock::reap_options reap{.batch_size = 10};
  {
    std::unique_lock guard(mine, std::try_to_lock);
    check(guard.owns_lock() && mine.fence() > 0, "an uncontended try_lock is granted with a fence");
    check(!theirs.try_lock(), "another owner is refused while it is held");
  }
  const bool granted = theirs.try_lock();
  check(granted, "another owner is granted after the release");
  if (granted) theirs.unlock();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: consumer URI...\n";
    return 2;
  }
  // Exceptions thrown inside libsqllock are caught here by their exported types.
  try {
    sqllock::database bad("nosuchdb://localhost/x");
    check(false, "an unknown URI scheme is rejected");
  } catch (const sqllock::invalid_argument& e) {
    check(true, std::string("an unknown URI scheme throws sqllock::invalid_argument: ") + e.what());
  } catch (const std::exception& e) {
    check(false, std::string("an unknown URI scheme throws sqllock::invalid_argument, not: ") + e.what());
  }
  for (int i = 1; i < argc; ++i) {
    try {
      exercise(argv[i]);
    } catch (const sqllock::error& e) {
      check(false, std::string("no sqllock::error on ") + argv[i] + ": " + e.what());
    }
  }
  std::cout << (failures ? "consumer: FAILED\n" : "consumer: all checks passed\n");
  return failures ? 1 : 0;
}
