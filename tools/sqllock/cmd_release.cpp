// sqllock release --force: deletes a lock's row (a semaphore's permits, a queue's places) whatever its
// owner, for a stuck job.
#include <iostream>

#include "cli.hpp"
#include "format.hpp"
#include "sqllock/database.hpp"
#include "sqllock/status.hpp"

namespace sqllock::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: sqllock release [--db URI] [--table NAME] [--kind table|semaphore|fair|rw] --lock NAME --force\n"
    "\n"
    "Deletes the row of lock NAME whoever holds it, and prints who held it. For a stuck job\n"
    "whose holder cannot release it. The holder is not stopped: its next lease renewal finds the\n"
    "row gone and reports the lock lost (`sqllock run` then stops its command and exits 5), so\n"
    "work it still does is no longer protected. The next holder gets a higher fencing token.\n"
    "With --kind semaphore, deletes every permit of the semaphore NAME instead (each holder\n"
    "learns at its next renewal that its permit was lost). With --kind fair or rw, deletes every\n"
    "place in the queue of the fair or read-write lock NAME, holding or waiting: each holder\n"
    "learns at its next renewal that it lost the lock, each waiter queues again at the back.\n"
    "Exit status 1 when NAME has no row.\n"
    "\n"
    "  --db URI      database URI (default: $SQLLOCK_DB)\n"
    "  --table NAME  lock table name (default: distributed_lock)\n"
    "  --kind KIND   table (default): the lock row; semaphore: the semaphore's permits;\n"
    "                fair, rw: the queue of the fair lock or read-write lock\n"
    "  --lock NAME   the lock (or semaphore) to release\n"
    "  --force       required: confirms that the owner does not matter\n";

}  // namespace

int cmd_release(args a) {
  if (a.flag("help", "h")) {
    std::cout << kUsage;
    return exit_ok;
  }
  database_options options;
  if (auto t = a.take("table")) options.table = *t;
  const auto name = a.take("lock");
  const std::string kind = a.take("kind").value_or("table");
  const bool force = a.flag("force");
  const std::string uri = database_uri(a);
  a.expect_done();
  if (!name) throw usage_error{"release needs --lock NAME"};
  if (!force)
    throw usage_error{
        "release deletes the lock whatever its owner; add --force to confirm (the holder learns "
        "that it lost the lock at its next renewal)"};

  if (kind != "table" && kind != "semaphore" && kind != "fair" && kind != "rw")
    throw usage_error{"release --kind must be table, semaphore, fair or rw, not '" + kind + "'"};

  database db(uri, options);
  if (kind == "fair" || kind == "rw") {
    const bool fair = kind == "fair";
    const auto entries = force_release_queue_entries(db, *name, fair ? queue_lock_kind::fair : queue_lock_kind::rw);
    const std::string what = fair ? "fair lock" : "read-write lock";
    if (entries.empty()) {
      std::cerr << "sqllock: no place in the queue of " << what << " '" << printable(*name) << "' in table '"
                << db.table() << "'; nothing released\n";
      return exit_not_obtained;
    }
    for (const auto& q : entries)
      std::cout << "released the "
                << (q.expired ? "expired"
                    : q.holds ? "holding"
                              : "waiting")
                << " place " << q.position << " (ticket " << q.fence << ", " << (q.writer() ? "write" : "read")
                << ") of " << what << " '" << printable(q.resource) << "' by force; it was taken by host "
                << printable(q.holder_host) << " pid " << q.holder_pid << " thread " << printable(q.holder_thread)
                << "\n";
    return exit_ok;
  }
  if (kind == "semaphore") {
    const auto permits = force_release_permits(db, *name);
    if (permits.empty()) {
      std::cerr << "sqllock: no permit of semaphore '" << printable(*name) << "' in table '" << db.table()
                << "'; nothing released\n";
      return exit_not_obtained;
    }
    for (const auto& p : permits)
      std::cout << "released permit " << p.slot << "/" << p.permits << " of '" << printable(p.resource)
                << "' by force; it was held by host " << printable(p.holder_host) << " pid " << p.holder_pid
                << " thread " << printable(p.holder_thread) << " (fence " << p.fence << ")\n";
    return exit_ok;
  }
  const auto gone = force_release(db, *name);
  if (!gone) {
    std::cerr << "sqllock: no lock '" << printable(*name) << "' in table '" << db.table() << "'; nothing released\n";
    return exit_not_obtained;
  }
  std::cout << "released '" << printable(gone->resource) << "' by force; it was held by host "
            << printable(gone->holder_host) << " pid " << gone->holder_pid << " thread "
            << printable(gone->holder_thread) << " (count " << gone->count << ", fence " << gone->fence << ", acquired "
            << printable(gone->acquired_at)
            << (gone->expired ? ", lease expired " + seconds_text(-gone->expires_in.count()) + " s ago)"
                              : ", lease had " + seconds_text(gone->expires_in.count()) + " s left)")
            << "\n";
  return exit_ok;
}

}  // namespace sqllock::cli
