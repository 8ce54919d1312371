// The checkers of a latch run (--kind latch, N = --latch-count), on the server's latch log
// (fault/latch_log.hpp) and the workers' histories (fault/latch_worker.hpp). Violations:
//   early-open    a latch observed open before N distinct participants' count-downs had committed:
//                 by the server (the count-down that left 0 found fewer than N distinct arrivals of
//                 its generation logged before it), by a state() read (open, with fewer than N
//                 arrivals listed), or by a waiter (wait_for returned open for generation g before
//                 the N-th distinct arrival of g was logged — or g never had N)
//   double-count  a participant counted twice: a generation whose count dropped more often than it
//                 has distinct arrivals (server log: the excess), a step of more than 1, a
//                 participant logged twice in one generation, a state() read whose count had
//                 dropped by more than its arrivals, or a participant id whose count-downs reported
//                 counted more often than the server logged arrivals of it
//   uncounted-arrival  a generation with more distinct arrivals than drops of its count: a
//                 participant recorded as arrived (so every retry is told "already counted")
//                 whose count-down never lowered the count
// Metrics: latch-generations-{armed,opened}, latch-arrivals, latch-count-downs-{counted,repeat,
// not-armed,retried}, latch-count-down-errors, latch-waits-{open,timed_out,absent},
// latch-state-reads, latch-participants-in-two-generations (an id's count-down that landed in a
// later generation than the one it read: allowed, each generation counts it once).
#pragma once

#include "fault/checker.hpp"

namespace sqllock::fault {

// Adds the latch checks' violations, metrics and examples (up to 20 in all) to `r`.
void check_latch(const run_evidence& ev, report& r);

}  // namespace sqllock::fault
