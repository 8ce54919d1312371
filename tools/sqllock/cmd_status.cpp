// sqllock status: every row of the lock table, the semaphore permits and the wait queue of fair and
// read-write locks (and PostgreSQL's advisory locks), as aligned tables for people or JSON for
// scripts.
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
    "SLOT/N (slot of N permits), and the queues of fair locks (KIND fair) and read-write locks\n"
    "(KIND rw): per name and kind, every place in ticket order (POS 1 first) with its MODE\n"
    "(write or read), its levels W/R and its STATE — held, waiting (behind AHEAD live places\n"
    "that block it) or expired. On PostgreSQL, the advisory locks of the current database\n"
    "(pg_locks) are listed too.\n"
    "\n"
    "  --db URI      database URI (default: $SQLLOCK_DB)\n"
    "  --table NAME  lock table name (default: distributed_lock)\n"
    "  --lock NAME   only this lock (and the permits of the semaphore NAME and the queues of\n"
    "                the fair and read-write locks NAME); exit status 1 when there is none\n"
    "  --json        one JSON object for scripts instead of the table\n"
    "\n"
    "In the table, control characters and invalid UTF-8 in names are shown as \\n, \\xNN …;\n"
    "JSON escapes them as JSON does (invalid UTF-8 becomes U+FFFD).\n";

// The JSON members that say who holds a row: owner, host, pid, thread.
std::string holder_members(const lock_info& l) {
  std::ostringstream o;
  o << "\"owner\":" << json_quote(l.owner) << ",\"host\":" << json_quote(l.holder_host) << ",\"pid\":" << l.holder_pid
    << ",\"thread\":" << json_quote(l.holder_thread);
  return o.str();
}

// The JSON members of a row's lease.
std::string lease_members(const lock_info& l) {
  std::ostringstream o;
  o << "\"expires_in_ms\":" << l.expires_in.count() << ",\"expires_in_s\":" << seconds_text(l.expires_in.count())
    << ",\"expired\":" << (l.expired ? "true" : "false");
  return o.str();
}

// The JSON members of a lock row (also the first members of a permit).
std::string lock_members(const lock_info& l) {
  std::ostringstream o;
  o << "\"resource\":" << json_quote(l.resource) << ',' << holder_members(l) << ",\"count\":" << l.count
    << ",\"fence\":" << l.fence << ",\"acquired_at\":" << json_quote(l.acquired_at) << ',' << lease_members(l);
  return o.str();
}

const char* kind_text(queue_lock_kind k) { return k == queue_lock_kind::fair ? "fair" : "rw"; }
const char* mode_text(const queue_entry_info& q) { return q.writer() ? "write" : "read"; }
// "held", "waiting" or "expired", as the table and JSON show a queue entry.
const char* state_text(const queue_entry_info& q) { return q.expired ? "expired" : q.holds ? "held" : "waiting"; }

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

std::string queue_json(const queue_entry_info& q) {
  std::ostringstream o;
  o << "{\"resource\":" << json_quote(q.resource) << ",\"kind\":\"" << kind_text(q.kind) << "\",\"ticket\":" << q.fence
    << ",\"position\":" << q.position << ",\"mode\":\"" << mode_text(q) << "\",\"write_levels\":" << q.write_levels
    << ",\"read_levels\":" << q.read_levels << ",\"state\":\"" << state_text(q)
    << "\",\"holds\":" << (q.holds ? "true" : "false") << ",\"blockers\":" << q.blockers << ',' << holder_members(q)
    << ",\"enqueued_at\":" << json_quote(q.acquired_at) << ',' << lease_members(q) << '}';
  return o.str();
}

std::string advisory_json(const advisory_lock_info& a) {
  std::ostringstream o;
  o << "{\"pid\":" << a.pid << ",\"keys\":[";
  for (std::size_t i = 0; i < a.keys.size(); ++i) o << (i ? "," : "") << a.keys[i];
  o << "],\"mode\":" << json_quote(a.mode) << ",\"granted\":" << (a.granted ? "true" : "false") << "}";
  return o.str();
}

// What the listing shows.
struct listing {
  std::vector<lock_info> locks;
  std::vector<permit_info> permits;
  std::vector<queue_entry_info> queue;
  std::optional<std::vector<advisory_lock_info>> advisory;
  bool empty() const { return locks.empty() && permits.empty() && queue.empty(); }
};

// `items` as a JSON array of to_json(item).
template <class T, class F>
std::string json_array(const std::vector<T>& items, F to_json) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out.append(i ? "," : "").append(to_json(items[i]));
  return out + "]";
}

void print_json(const database& db, const listing& shown) {
  std::cout << "{\"table\":" << json_quote(db.table()) << ",\"dialect\":" << json_quote(to_string(db.dialect()))
            << ",\"locks\":" << json_array(shown.locks, lock_json)
            << ",\"permits\":" << json_array(shown.permits, permit_json)
            << ",\"queue\":" << json_array(shown.queue, queue_json);
  if (shown.advisory) std::cout << ",\"advisory_locks\":" << json_array(*shown.advisory, advisory_json);
  std::cout << "}\n";
}

void print_table(const database& db, const listing& shown) {
  const auto& [locks, permits, queue, advisory] = shown;
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
  if (!queue.empty()) {
    std::cout << "\nqueues of fair and read-write locks:\n";
    text_table t({"RESOURCE", "KIND", "POS", "TICKET", "MODE", "W/R", "HOST", "PID", "THREAD", "ENQUEUED_UTC",
                  "EXPIRES_IN_S", "STATE", "AHEAD"});
    for (const auto& q : queue)
      t.add({printable(q.resource), kind_text(q.kind), std::to_string(q.position), std::to_string(q.fence),
             mode_text(q), std::to_string(q.write_levels) + "/" + std::to_string(q.read_levels),
             printable(q.holder_host), std::to_string(q.holder_pid), printable(q.holder_thread),
             printable(q.acquired_at), seconds_text(q.expires_in.count()), state_text(q), std::to_string(q.blockers)});
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
  listing shown;
  if (name) {
    if (auto found = find_lock(db, *name)) shown.locks.push_back(std::move(*found));
    shown.permits = find_permits(db, *name);
    shown.queue = find_queue_entries(db, *name);
  } else {
    shown.locks = list_locks(db);
    shown.permits = list_permits(db);
    shown.queue = list_queue_entries(db);
  }
  const bool none = shown.empty();
  // Advisory keys cannot be traced back to a name, so they belong to the full listing only.
  if (!name && db.dialect() == dialect_kind::postgresql) shown.advisory = list_advisory_locks(db);

  if (json)
    print_json(db, shown);
  else if (name && none)
    std::cerr << "sqllock: no lock '" << printable(*name)
              << "' (nor a semaphore permit or a queue entry of that name) in table '" << db.table() << "'\n";
  else
    print_table(db, shown);
  return name && none ? exit_not_obtained : exit_ok;
}

}  // namespace sqllock::cli
