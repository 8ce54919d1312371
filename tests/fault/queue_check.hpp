// The checks of the queued kinds (--kind fair, --kind rw), on the workers' holds (fault/holds.hpp:
// a hold's ticket is its fence; A's database clock reading, taken by the section's first read
// after the grant, is where the hold is known to have begun on the server's clock) and the
// server's queue log (fault/queue_log.hpp: every place with its ticket, mode, expiry and end).
// A place is *in the queue* from when it was logged until its end: deleted (released, given up,
// removed by a check or the reaper as expired), replaced by a new ticket, or past its lease
// (the latest expires_at any renewal set) on the database clock. Violations:
//   write-overlap   a write hold and another hold of the name (a read or a write hold of another
//                   place) were both in force at one instant of the database clock: each is in
//                   force from its first read (A's clock) until its place's end, and neither place
//                   had ended — the server's own record says both holders held at once. (A hold
//                   whose place had ended before its first read is in force at no instant: its
//                   holder went stale before it could look, which client-overlap judges.)
//   ticket-order    a hold began (its first read) while a place of the name with a lower ticket that
//                   blocks its mode (every place blocks a write; only a writer's place blocks a
//                   read) was still in the queue and had not begun to hold: a higher ticket served
//                   before a lower one that had neither expired nor left. (A lower place that did
//                   hold then is an overlap, write-overlap's to count.)
//   ticket-arrival  the log's places of a name, taken in ticket order, were not logged in that order:
//                   tickets are not the order of arrival (the premise of ticket-order: a lower
//                   ticket commits before a higher one is drawn).
//   fence-order     by the holds' first reads, a write hold's ticket below a ticket of a hold of the
//                   name that began before it, or a read hold's below an earlier write hold's (the
//                   holds whose place ended before their first read left out; an equal ticket is
//                   the same place held again).
//   queue-stall     the name was free — no worker thread of a running process between its grant (A)
//                   and the return of its release (X) — while some waiter was in an acquire call
//                   of it, without a break, for longer than `slack` (1 s, stretched in sanitizer
//                   builds) past the latest *excuse*. Excuses: the start of that free stretch; a
//                   server fault's end; for a server fault, also the later of its start + L (the
//                   most a place it left behind can block: its lease, as renewed before the fault)
//                   and its end; each failed call or release of the name (T, or X other than ok)
//                   + L, as a place given up with an error may run out with its lease; and the
//                   later of start + L and end of each fault on a process involved with the name.
//                   Involved: on MySQL/MariaDB and SQLite, whose enqueues share one ticket counter
//                   or one writer, any paused process; on PostgreSQL (and for kills everywhere), a
//                   process that had a place of the name in the queue, or a call or hold of it, at
//                   some instant from the fault's start until it ran again (after a kill: never) —
//                   an enqueue in flight at a kill still commits, a place that no event of the dead
//                   process announces (metric queue-places-logged-while-down). Paused and killed
//                   processes neither hold nor wait.
//                   Also a machine or server stall (fault/stall_monitor.hpp) from its start to its
//                   end + its length: what was sent during it is answered at once at its end.
// Metrics: queue-places, queue-places-left-unheld, queue-holds-write / -read,
// queue-holds-stale-at-first-read, write-overlap-max-us, queue-stall-windows,
// queue-free-awaited-max-ms, queue-handoff-max-ms (the longest free wait past its excuse),
// queue-places-logged-while-down,
// queue-stall-bound-ms, reads-torn (u changed between a read hold's first and last read).
#pragma once

#include <vector>

#include "fault/checker.hpp"
#include "fault/holds.hpp"

namespace sqllock::fault {

// Adds the queue checks' violations, metrics and examples (up to 20 in all) to `r`.
void check_queue(const run_evidence& ev, const std::vector<hold_rec>& holds, report& r);

}  // namespace sqllock::fault
