// The checks of the guarded writes (fault/guarded_write.hpp), in runs of the leased kinds
// (table, semaphore per slot, multi per name, fair, rw's write holds), on the histories alone:
//   stale-guarded-write  a guarded write committed (W ok) although another hold of its key with a
//                        higher fence — a later grant — had been granted before the commit was
//                        sent: its acquire had returned (its A line) before W's send time. The
//                        commit comes after that time and the grant before that line, so each
//                        one counted is a write committed after the next holder's grant.
//   guarded-lost-update  a key's guarded counter g (read at the section's start, written as read
//                        + 1 at its end) below the count of its committed guarded writes (an
//                        overlapping read-modify-write lost), or above that count plus the
//                        indeterminate ones (W unk, or a process killed inside a write hold
//                        before its W line). Not a verdict on Galera, whose nodes may serve the
//                        section's first read before they have applied another node's commit
//                        (the metric guarded-lost-updates still reports it there).
//   guarded-writes-none  ten or more guarded writes tried and none committed: the two checks above
//                        proved nothing (as when every write failed on the way to the database).
//                        Fewer tries are a run starved by its machine, not flagged.
// Metrics: guarded-writes-ok, -lost (the guard refused: lock_lost), -rej (another error before the
// commit), -unk; guarded-writes-stopped, those refused whose transaction began after a later grant
// of their key — each one a write that, without its guard, would have committed after the next
// holder's grant (what the unguarded-write control commits); and guarded-lost-updates.
#pragma once

#include <vector>

#include "fault/checker.hpp"
#include "fault/holds.hpp"

namespace sqllock::fault {

// Adds stale-guarded-write, guarded-lost-update and guarded-writes-none (violations) and the metrics above to `r`.
void check_guarded(const run_evidence& ev, const std::vector<hold_rec>& holds, report& r);

}  // namespace sqllock::fault
