// The checkers of a fault run. Each check counts violations (must be 0 in a healthy run) and
// the run also reports metrics (counts that are information, not verdicts).
//
// Violations, by name:
//   server-overlap      two table_lock grants of one resource overlap on the database clock: a
//                       grant lasts from granted_at to its expiry, or to its DELETE when deleted
//                       earlier (then compared with when the next grant was logged)
//   fence-order         fences not strictly increasing in the order grants took effect (server log)
//   foreign-delete      a grant's row deleted before its expiry by someone other than its holder
//                       (the holder's own release did not report success, and the holder had not
//                       been told of the loss before the delete: sqllock deletes the row of a hold
//                       it declared lost as an orphan)
//   unknown-fence       a client believes in a (resource, fence) the server never granted
//   reentry-fence       a re-entrant acquire reported another fence than its hold, without a lost signal
//   lost-write          the fenced counter holds fewer increments than writes reported accepted
//   phantom-write       … more than accepted plus indeterminate ones
//   stale-write         a fenced write accepted after a write with a higher fence had completed
//   client-overlap      two clients in their critical sections at once, not explained by a fault
//                       on the earlier holder (pause > L/2 or a server fault — restart,
//                       kill-primary, rejoin, kill-node — for table locks; its session killed or a
//                       server fault for session and row locks; for advisory and named locks also
//                       a long pause after which the keepalive declared the session lost)
//   lost-signal-late    after a session kill, the holder learned nothing within keepalive + 1 s
//                       (the 1 s stretched in sanitizer builds: support/time_scale.hpp)
//   liveness            a resource not acquirable within the bound after the last fault (counted
//                       from when every worker was dead and reaped)
//   row-atomicity       row locks: the in-transaction unfenced counter lost an update
//   told-before-granted a grant while another holder of the lock (beyond its capacity: N permits,
//                       readers share) had neither begun its release nor been told of its loss,
//                       on the monotonic clock; not in latch runs (fault/told_check.hpp)
//   stale-guarded-write, guarded-lost-update, guarded-writes-none
//                       runs of the leased kinds: the guarded writes (fault/guard_check.hpp)
// Semaphore runs (--kind semaphore, N = --permits) key every check above by (name, slot) —
// "r0/1", the slot the permit held — where it keeps its meaning (server-overlap: no two grants of
// one slot overlap; fenced writes per slot), and report (only there):
//   server-overcommit   more than N permits of a name live at once by the server's permit log
//                       (from the grant's logged_at to its DELETE or expiry)
//   slot-fence-order    fences per (name, slot) not strictly increasing in grant order (the
//                       semaphore's fence-order, which stays 0 there)
// Only on the HA setups (fence-causal: pgaf and galera; the failover checks: pgaf), so standalone
// reports keep their lines:
//   fence-causal        table: a hold's acquire began after another hold of the resource had
//                       been granted (its acquire returned), yet got a fence not above it — a
//                       client-side fence-order that also covers grants a failover lost
//   failover-liveness   kill-primary: a resource not granted to a worker within failover time +
//                       L + 1 s after the new primary accepted writes (the 1 s stretched in
//                       sanitizer builds)
//   failover-lost-signal  kill-primary: a holder inside its section at the kill that was not
//                       told (lost signal, or a release that did not succeed) within the bound:
//                       L + 1 s for table locks (the lease runs out), keepalive + 1 s for
//                       session locks (the session died with the node)
// Multi runs (--kind multi) are checked per name like table runs (their rows are table_lock rows)
// and report (only there) partial-grant: a multi-lock's set granted only in part
// (fault/multi_check.hpp).
// Fair and rw runs (--kind fair, rw: places in the wait queue, their tickets the fences) run
// unknown-fence (a hold's ticket must be a place of the server's queue log), foreign-delete (a
// held place deleted before its lease ran out by someone other than its holder), reentry-fence,
// stale-write, lost-write / phantom-write (write holds), client-overlap (pairs with a write hold),
// fence-causal (client-side, as on the HA setups) and liveness, and report (only there)
// write-overlap, ticket-order, ticket-arrival, queue-stall and a fence-order of their own, all
// described in fault/queue_check.hpp.
// Latch runs (--kind latch) hold no lock: the checks above find nothing to check there; their
// own checks (early-open, double-count, uncounted-arrival) are described in fault/latch_check.hpp.
// A refusal run (--expect-refusal, check_refusal) has one verdict:
//   refusal-missing     a worker process of which some thread's first lock call did not throw
//                       not_supported
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fault/config.hpp"
#include "fault/fleet.hpp"
#include "fault/history.hpp"
#include "fault/latch_log.hpp"
#include "fault/nemesis.hpp"
#include "fault/queue_log.hpp"
#include "fault/schema.hpp"

namespace sqllock::fault {

struct liveness_result {
  std::string resource;
  std::int64_t waited_ms = -1;  // -1: not acquired
};

struct run_evidence {
  run_config cfg;
  std::vector<event> events;         // every worker's history
  std::vector<worker_proc> workers;  // with kill times
  std::vector<fault_event> faults;
  // When the machine or the server was too starved to run anyone (fault/stall_monitor.hpp): read
  // by the liveness checks only.
  std::vector<fault_event> stalls;
  std::vector<grant_row> grants;  // table locks; semaphore permits (per slot_key)
  std::vector<data_row> data;
  std::vector<latch_log_row> latch_log;   // latch runs: the server's latch log (fault/latch_check.hpp)
  std::vector<queue_log_row> queue_log;   // fair and rw runs: the server's queue log (fault/queue_log.hpp)
  std::int64_t queue_stall_slack_ms = 0;  // queue-stall: a free name's waiter must hold within this past its excuse
  std::vector<liveness_result> liveness;
  std::int64_t liveness_bound_ms = 0;
  std::int64_t liveness_from = 0;             // CLOCK_MONOTONIC: when the liveness probes' waits began
  std::int64_t lost_signal_bound_ms = 0;      // a killed session's holder must learn within this
  std::int64_t failover_signal_bound_ms = 0;  // a holder at a kill-primary must learn within this
  std::int64_t failover_slack_ms = 0;         // failover-liveness bound: failover time + this
  std::int64_t resume_slack_ms = 0;  // told-before-granted: a paused holder must be told within this of resuming
  // CLOCK_REALTIME − CLOCK_MONOTONIC in ns: the private server runs on this host, so its clock
  // (the grant log's times) is CLOCK_REALTIME; this maps those times onto the histories' clock.
  std::int64_t realtime_minus_mono_ns = 0;
};

struct report {
  std::map<std::string, std::int64_t> violations;  // every check, 0 when clean
  std::map<std::string, std::int64_t> metrics;
  std::vector<std::string> examples;  // a few violations, described
  std::int64_t total_violations() const;
  // Counts one violation of checker `name`, described by `what` among the first 20 examples.
  void add_violation(const std::string& name, const std::string& what);
};

report check(const run_evidence& ev);

// A refusal run of ev.cfg.kind: each thread's verdict is its first grant or not_supported (other
// errors are retried). Metrics refusal-<kind>-threads-{refused,granted,undecided} (undecided: no
// verdict yet) and refusal-<kind>-worker-processes.
report check_refusal(const run_evidence& ev);

}  // namespace sqllock::fault
