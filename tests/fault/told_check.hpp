// told-before-granted: every holder is told of its loss before any other holder of its lock is
// granted it. Both times are on the histories' clock (CLOCK_MONOTONIC, one for every process).
//
// A hold *claims* its lock from its grant (A: the acquire returned) until the first of: its
// section ended and its release began (Y), it was told (its first lost signal, L), or its process
// died (a crash or the final kill). A grant G of a name is a violation when, at G's A, holds of
// other worker threads that claim the name, with G, are more than the lock admits:
//   - table, advisory, named, row, multi (per name), fair: 1 — any other claim;
//   - rw: a read grant shares with read claims, so only write claims count against it; a write
//     grant, every claim;
//   - semaphore: N permits per name, across its slots — a grant is a violation only when it makes
//     more than N claims of the name (a holder whose slot was taken over while another slot was
//     free is not).
// A claim is excused (counted as told-before-granted-excused-by-<fault>, not flagged) when no
// client could have been told in time: its process was stopped by a pause ≥ 1.5 L that began
// before G and ended less than the resume slack before it (a stopped process runs no watchdog); or,
// for session and row locks, which the server takes away with the session, its session was killed
// or a server fault happened during the hold before G (lost-signal-late bounds how late those
// holders learn); and every claim is excused against a session-lock grant that a kill of its own
// session made stale while it was on its way (ended_in_flight below). Nothing excuses a leased claim whose holder was running: its lease deadline is
// local knowledge, so a renewal that hangs (a network partition, a stalled server) must not keep
// it from being told. Network faults never excuse.
// Metrics: told-late-max-ms (how long after the grant enough of the untold holders were told, or
// ended their sections, for the grant to fit), net-partition-holders (holds inside their sections
// when a partition of their process began) and net-partition-holders-past-lease (those still
// inside a lease later).
#pragma once

#include <string>
#include <vector>

#include "fault/checker.hpp"
#include "fault/holds.hpp"

namespace sqllock::fault {

// A session lock's grant `g` that the server gave before it ended the session (a session kill
// while the acquire was in flight: the answer was on its way), read after the kill: the server
// freed the lock at the kill, as it does a holder's, and the holder learned of it within the
// keepalive bound (lost_signal_bound_ms), as after any kill. sqllock pings before it counts a grant
// read a keepalive period or more after the attempt began; a sooner one is the keepalive's to
// check. Returns the excuse's name ("" when `g` is no such grant); g's grant, not the earlier
// holder's, is the stale one.
std::string ended_in_flight(const run_evidence& ev, const hold_rec& g);

// Adds told-before-granted (violations) and its metrics to `r`.
void check_told(const run_evidence& ev, const std::vector<hold_rec>& holds, report& r);

}  // namespace sqllock::fault
