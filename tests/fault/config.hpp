// The settings of one fault run, shared by the controller and its worker processes.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::fault {

// The lock under test.
// semaphore: sqllock::semaphore with run_config::permits permits per resource name; its
// sections are keyed by (name, slot) ("r0/1"), the slot that the permit holds.
// latch: sqllock::latch, one per resource name, armed with run_config::latch_count count-downs
// again and again (generations); checked by fault/latch_check.hpp, not as a lock.
// multi: sqllock::multi_lock over run_config::names_per_set of the run's names at a time
// (fault/multi_worker.hpp); its rows are table_lock rows, checked per name like the table kind's
// and for sets granted in part (fault/multi_check.hpp).
// fair, rw: sqllock::fair_lock and sqllock::rw_lock, places in the wait queue
// (fault/queue_holder.hpp); an rw worker takes the write lock one time in three, else the read
// lock. Checked against the server's log of the queue (fault/queue_log.hpp, fault/queue_check.hpp).
enum class lock_kind { table, advisory, named, row, semaphore, latch, multi, fair, rw };

// A deliberately unsafe peer that the checkers must catch (negative controls). Implemented only
// here, as raw SQL a careless client could send; the library has no such mode.
enum class control {
  none,
  // Releases by resource alone: DELETE … WHERE resource = ? (no owner or fence match).
  unsafe_release,
  // Takes a lease over when its own clock, 5 leases fast, says the lease ran out.
  client_clock,
  // A semaphore that counts: SELECT COUNT(*) of the name's live permits, then (a separate
  // statement, after a short random sleep) an INSERT with a fresh slot number >= N when the
  // count was below N — so the primary key never stops it (research T1). PostgreSQL only.
  count_then_insert,
  // A latch count-down that inserts its arrival row (if missing) and then decrements the count
  // in a separate statement, and retries both after an error or a reply it takes as lost — so
  // one participant is counted twice (fault/latch_worker.hpp). PostgreSQL only.
  rogue_count_down,
  // A multi-lock taken name by name (one autocommit table_lock each, unsorted, no waiting) that
  // releases the names it took when a later one is refused (fault/multi_worker.hpp).
  sequential_multi,
  // A queue that ignores its tickets: every worker thread takes a place in the fair locks' queue
  // (raw SQL, a real ticket) and then holds whenever no live holder exists — a lease row of its
  // own, free or expired — whoever of the waiters polls first (fault/queue_rogue.hpp). PostgreSQL.
  unordered_queue,
  // A read-write lock reader that takes a reader's place in the queue (raw SQL) and holds at once,
  // ignoring the writers ahead of it: thread 0 of each process, among sqllock's rw_lock holders
  // (fault/queue_rogue.hpp). PostgreSQL only.
  reader_ignores_writer,
  // A fair_lock holder whose release, once it has returned ok, leaves a place behind that nobody
  // holds, leaves or renews — as a give-back that reports success and deletes nothing would: thread
  // 0 of each process, among sqllock's fair_lock holders (fault/queue_rogue.hpp). PostgreSQL only.
  leaked_place,
  // A table_lock holder that ignores the library's lost signal and learns of a loss only from a
  // statement of its own through its (maybe partitioned) lock connection, once that statement
  // returns — the lost signal as it was before the local deadline fired it (fault/told_late.hpp).
  // Every worker thread; PostgreSQL or MariaDB, with network faults.
  told_on_return,
  // Every worker thread's guarded write (fault/guarded_write.hpp) runs without its guard: the same
  // transaction, checked by nothing. Leased kinds.
  unguarded_write,
};

// The servers a run starts (scripts/test-servers.sh, scripts/ha-servers.sh): one standalone
// server; a pg_auto_failover pair (primary + synchronous standby, reached through a multi-host
// URI) whose primary the nemesis kills; or a three-node MariaDB Galera cluster, the workers
// spread over its nodes, whose third node the nemesis kills and restarts.
enum class setup_kind { standalone, pgaf, galera };

struct run_config {
  dialect_kind dialect = dialect_kind::postgresql;
  lock_kind kind = lock_kind::table;
  std::vector<lock_kind> kinds;  // --kind's list: kind first, and more in a refusal run
  control ctl = control::none;
  std::chrono::seconds duration{60};
  int processes = 4;                            // N worker processes …
  int threads = 4;                              // … × M threads each
  int resources = 4;                            // K contended resources
  int permits = 2;                              // N: the semaphore kind's permits per resource
  int latch_count = 8;                          // N: the latch kind's count-downs per generation
  int names_per_set = 3;                        // K: the multi kind's names per multi_lock
  std::chrono::milliseconds lease{2000};        // L: table_lock ttl
  std::chrono::milliseconds keepalive{500};     // session locks' keepalive
  std::chrono::milliseconds fault_every{3000};  // a fault starts this often
  setup_kind setup = setup_kind::standalone;
  int restarts = 2;  // server faults per run: restarts (alternating fast / immediate), primary or node kills
  std::vector<std::string> faults;  // the nemesis' rounds of client and network faults; empty: its defaults
  bool long_mode = false;
  // Query parameters (k=v&…) added to the URIs the locks use (workers, liveness probes).
  std::string lock_uri_params;
  // A run mode: each lock kind of `kinds` must be refused (not_supported) by every worker's
  // first lock call.
  bool expect_refusal = false;
  // --via pgbouncer: the workers' lock connections go through the PgBouncer (transaction pooling,
  // 2 server connections) that scripts/test-servers.sh starts in front of the standalone
  // PostgreSQL, with ?prepare=off — worker, its proxy (network faults), PgBouncer, PostgreSQL.
  // Their sections' handle, the reaper, the probes and the checks connect to PostgreSQL directly.
  bool via_pgbouncer = false;
};

std::string to_string(lock_kind k);
std::string to_string(control c);
std::string to_string(setup_kind s);
// Parses what to_string prints ("mariadb" is accepted for dialect mysql); throws std::invalid_argument.
lock_kind parse_lock_kind(const std::string& s);
control parse_control(const std::string& s);
setup_kind parse_setup(const std::string& s);
dialect_kind parse_dialect(const std::string& s);

// The lock kinds whose holds wait in the queue (schema 5): fair and rw.
inline bool queued(lock_kind k) { return k == lock_kind::fair || k == lock_kind::rw; }

// The lock kinds held by a lease (ttl): table, semaphore and multi, whose expired rows the reaper
// ends, and the queued kinds, whose expired places the queue's own checks delete (the reaper runs
// in their runs too, as an operator's daemon would).
inline bool leased(lock_kind k) {
  return k == lock_kind::table || k == lock_kind::semaphore || k == lock_kind::multi || queued(k);
}

// The nemesis' network faults (net-partition, net-stall, net-latency, net-retransmit): on one
// worker's lock connections, through its proxy (fault/net_link.hpp).
inline bool network_fault(const std::string& kind) { return kind.rfind("net-", 0) == 0; }

// Whether the run injects network faults, so that its workers route their lock connections
// through a proxy: on a standalone server (SQLite has no network; the HA setups' multi-host and
// per-node URIs are not proxied), by default or when --faults names one.
bool injects_network_faults(const run_config& c);

// The lock kinds run behind a transaction-mode pooler (--via pgbouncer): not the session-level
// ones (advisory_lock, whose lock stays with a shared server session; named_lock is MariaDB's), and
// not row locks: they have no lost signal, their holder is excused only by a kill of its own
// session, and the nemesis cannot tell whose transaction a pooler's server session runs.
inline bool poolable(lock_kind k) { return k != lock_kind::advisory && k != lock_kind::named && k != lock_kind::row; }

// The reaper period the controller uses: L / 2.
inline std::chrono::milliseconds reaper_period(const run_config& c) { return c.lease / 2; }

}  // namespace sqllock::fault
