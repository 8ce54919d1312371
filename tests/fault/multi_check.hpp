// The multi-lock checker of a multi run (--kind multi, K = --names-per-set), on the server's
// grant log of lock rows (fault/schema.hpp: one grant per name, with its owner token) and the
// workers' M lines (fault/multi_worker.hpp). Each attempt has an owner key of its own
// ("set-<pid>.<thread>.<n>"; owner token "<session>/k:<key>"), so the log's grants of one
// attempt are those of one owner token. Violation:
//   partial-grant  a set granted only in part: an attempt's owner token whose grants name fewer
//                  (or more) than K distinct names, or unequal numbers of grants per name, or whose
//                  first grant of some name ended (DELETE or expiry) before the first grant of
//                  another name was logged (the names were never all held at once) — unless
//                  every grant of the attempt was logged after all of its leases had run out (it
//                  committed nothing live: an attempt that waited on row locks for longer than the
//                  lease, which the client gives back); or a section
//                  a worker entered (M) with a name whose (name, fence) the log does not show
//                  granted to that attempt, or with other than K distinct names
// Metrics: multi-sets-entered (M lines), multi-server-sets (owner tokens of attempts in the log),
// multi-server-set-grants, multi-server-sets-expired-when-granted (the attempts left out above).
// Overlap per name is the common checkers' (server-overlap, client-overlap, fence-order,
// stale-write … per name), which run on multi runs as on table runs.
#pragma once

#include "fault/checker.hpp"

namespace sqllock::fault {

// Adds the partial-grant check's violations, metrics and examples (up to 20 in all) to `r`.
void check_multi(const run_evidence& ev, report& r);

}  // namespace sqllock::fault
