// sqllock status: every row of the lock table (and PostgreSQL's advisory locks), as an aligned
// table for people or JSON for scripts.
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "format.hpp"
#include "sqllock/database.hpp"
#include "sqllock/status.hpp"

namespace sqllock::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: sqllock status [--db URI] [--table NAME] [--lock NAME] [--json]\n"
    "\n"
    "Lists the rows of the lock table: who holds each lock (host, pid, thread), its reentrancy\n"
    "count and fencing token, when it was acquired (UTC) and how many seconds are left on its\n"
    "lease by the database's clock. Rows whose lease ran out are marked `expired`: any acquire\n"
    "may take them over and the reaper deletes them. Then the permits of semaphores, each as\n"
    "SLOT/N (slot of N permits). On PostgreSQL, the advisory locks of the current database\n"
    "(pg_locks) are listed too.\n"
    "\n"
    "  --db URI      database URI (default: $SQLLOCK_DB)\n"
    "  --table NAME  lock table name (default: distributed_lock)\n"
    "  --lock NAME   only this lock (and the permits of the semaphore NAME); exit status 1\n"
    "                when there is neither\n"
    "  --json        one JSON object for scripts instead of the table\n"
    "\n"
    "In the table, control characters and invalid UTF-8 in names are shown as \\n, \\xNN …;\n"
    "JSON escapes them as JSON does (invalid UTF-8 becomes U+FFFD).\n";

// The JSON members of a lock row (also the first members of a permit).
std::string lock_members(const lock_info& l) {
  std::ostringstream o;
  o << "\"resource\":" << json_quote(l.resource) << ",\"owner\":" << json_quote(l.owner)
    << ",\"host\":" << json_quote(l.holder_host) << ",\"pid\":" << l.holder_pid
    << ",\"thread\":" << json_quote(l.holder_thread) << ",\"count\":" << l.count << ",\"fence\":" << l.fence
    << ",\"acquired_at\":" << json_quote(l.acquired_at) << ",\"expires_in_ms\":" << l.expires_in.count()
    << ",\"expires_in_s\":" << seconds_text(l.expires_in.count()) << ",\"expired\":" << (l.expired ? "true" : "false");
  return o.str();
}

std::string lock_json(const lock_info& l) {
  std::ostringstream o;
  o << '{' << lock_members(l) << '}';
  return o.str();
}

std::string permit_json(const permit_info& p) {
  std::ostringstream o;
  o << '{' << lock_members(p) << ",\"slot\":" << p.slot << ",\"permits\":" << p.permits << '}';
  return o.str();
}

std::string advisory_json(const advisory_lock_info& a) {
  std::ostringstream o;
  o << "{\"pid\":" << a.pid << ",\"keys\":[";
  for (std::size_t i = 0; i < a.keys.size(); ++i) o << (i ? "," : "") << a.keys[i];
  o << "],\"mode\":" << json_quote(a.mode) << ",\"granted\":" << (a.granted ? "true" : "false") << "}";
  return o.str();
}

void print_json(const database& db, const std::vector<lock_info>& locks, const std::vector<permit_info>& permits,
                const std::optional<std::vector<advisory_lock_info>>& advisory) {
  std::cout << "{\"table\":" << json_quote(db.table()) << ",\"dialect\":" << json_quote(to_string(db.dialect()))
            << ",\"locks\":[";
  for (std::size_t i = 0; i < locks.size(); ++i) std::cout << (i ? "," : "") << lock_json(locks[i]);
  std::cout << "],\"permits\":[";
  for (std::size_t i = 0; i < permits.size(); ++i) std::cout << (i ? "," : "") << permit_json(permits[i]);
  std::cout << "]";
  if (advisory) {
    std::cout << ",\"advisory_locks\":[";
    for (std::size_t i = 0; i < advisory->size(); ++i) std::cout << (i ? "," : "") << advisory_json((*advisory)[i]);
    std::cout << "]";
  }
  std::cout << "}\n";
}

void print_table(const database& db, const std::vector<lock_info>& locks, const std::vector<permit_info>& permits,
                 const std::optional<std::vector<advisory_lock_info>>& advisory) {
  if (locks.empty()) {
    std::cout << "no locks in table '" << db.table() << "'\n";
  } else {
    text_table t({"RESOURCE", "HOST", "PID", "THREAD", "COUNT", "FENCE", "ACQUIRED_UTC", "EXPIRES_IN_S", "STATE"});
    for (const auto& l : locks)
      t.add({printable(l.resource), printable(l.holder_host), std::to_string(l.holder_pid), printable(l.holder_thread),
             std::to_string(l.count), std::to_string(l.fence), printable(l.acquired_at),
             seconds_text(l.expires_in.count()), l.expired ? "expired" : "held"});
    t.print(std::cout);
  }
  if (!permits.empty()) {
    std::cout << "\nsemaphore permits:\n";
    text_table t({"RESOURCE", "SLOT/N", "HOST", "PID", "THREAD", "FENCE", "ACQUIRED_UTC", "EXPIRES_IN_S", "STATE"});
    for (const auto& p : permits)
      t.add({printable(p.resource), std::to_string(p.slot) + "/" + std::to_string(p.permits), printable(p.holder_host),
             std::to_string(p.holder_pid), printable(p.holder_thread), std::to_string(p.fence),
             printable(p.acquired_at), seconds_text(p.expires_in.count()), p.expired ? "expired" : "held"});
    t.print(std::cout);
  }
  if (!advisory) return;
  std::cout << "\nadvisory locks (pg_locks, current database):\n";
  if (advisory->empty()) {
    std::cout << "none\n";
    return;
  }
  text_table t({"PID", "KEY", "MODE", "GRANTED"});
  for (const auto& a : *advisory) {
    std::string key;
    for (std::size_t i = 0; i < a.keys.size(); ++i) {
      if (i) key += ',';
      key += std::to_string(a.keys[i]);
    }
    t.add({std::to_string(a.pid), key, printable(a.mode), a.granted ? "yes" : "no"});
  }
  t.print(std::cout);
}

}  // namespace

int cmd_status(args a) {
  if (a.flag("help", "h")) {
    std::cout << kUsage;
    return exit_ok;
  }
  database_options options;
  if (auto t = a.take("table")) options.table = *t;
  const auto name = a.take("lock");
  const bool json = a.flag("json");
  const std::string uri = database_uri(a);
  a.expect_done();

  database db(uri, options);
  std::vector<lock_info> locks;
  std::vector<permit_info> permits;
  if (name) {
    if (auto l = find_lock(db, *name)) locks.push_back(std::move(*l));
    permits = find_permits(db, *name);
  } else {
    locks = list_locks(db);
    permits = list_permits(db);
  }
  const bool none = locks.empty() && permits.empty();
  // Advisory keys cannot be traced back to a name, so they belong to the full listing only.
  std::optional<std::vector<advisory_lock_info>> advisory;
  if (!name && db.dialect() == dialect_kind::postgresql) advisory = list_advisory_locks(db);

  if (json)
    print_json(db, locks, permits, advisory);
  else if (name && none)
    std::cerr << "sqllock: no lock '" << printable(*name) << "' (nor a permit of a semaphore of that name) in table '"
              << db.table() << "'\n";
  else
    print_table(db, locks, permits, advisory);
  return name && none ? exit_not_obtained : exit_ok;
}

}  // namespace sqllock::cli
