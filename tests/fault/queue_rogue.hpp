// The deliberately unsafe queue peers of the queue kinds' negative controls, as raw SQL on
// sqllock's queue table (PostgreSQL only; the library has no such mode). Each takes a real place —
// a row of `distributed_lock_queue` with a ticket drawn as sqllock draws it (the name's
// transaction-scoped advisory lock, then the lock table's sequence) — so that the server's queue
// log (fault/queue_log.hpp) records it like any other, and then breaks one rule of the queue:
//
// "Unordered queue" (unordered_queue_holders, --control unordered-queue, every worker thread of a
// fair run): after taking its place it holds whenever no live holder exists — a lease row of its
// own per name in fault_barge, free or past its expiry, taken with one upsert — whichever waiter
// polls first, ignoring the tickets of the waiters ahead of it. Mutual exclusion holds (the lease
// row; its expiry is the place's, which outlasts the hold), FIFO does not: ticket-order must see
// higher tickets granted while lower ones wait. Its place has a lease of the wait plus 3 L and is
// not renewed; it leaves the queue (DELETE and NOTIFY) before it frees the lease row.
//
// "Reader ignores writer" (rogue_reader_holders, --control reader-ignores-writer, thread 0 of each
// process of an rw run, among sqllock's rw_lock holders): a reader that takes a reader's place and
// holds at once, whatever is ahead of it — also a writer that holds. sqllock's writers behind its
// place wait for it as for any reader; the writers ahead hold with it: write-overlap must see them.
//
// "Leaked place" (leaked_place_holders, --control leaked-place, thread 0 of each process of a fair
// run, among sqllock's fair_lock holders): sqllock's own holder, whose release, once it has
// returned ok, leaves a place of the name behind (a new one, ticket drawn as sqllock draws it,
// lease 3 L, never held, left or renewed), as a give-back that reports success and deletes nothing
// would. Nothing excuses the wait: no call failed and no fault hit it. The waiters behind the
// place wait out its lease while the name is free: queue-stall must see it.
#pragma once

#include <memory>
#include <vector>

#include "fault/config.hpp"
#include "support/lock_kinds.hpp"

namespace sqllock::fault {

// Creates the unordered queue's lease rows' table, fault_barge (PostgreSQL).
void create_barge_table(const database& db);

// One unordered-queue peer per resource (holders[i] of resource_name(i)) for worker thread
// `thread`, over `db`; its sections are queue_sections (fault/queue_holder.hpp) in write mode.
std::vector<std::unique_ptr<test::lock_holder>> unordered_queue_holders(const run_config& cfg, const database& db,
                                                                        int thread);

// One rogue reader per resource (holders[i] of resource_name(i)) for worker thread `thread`, over
// `db`; its sections are queue_sections in read mode.
std::vector<std::unique_ptr<test::lock_holder>> rogue_reader_holders(const run_config& cfg, const database& db,
                                                                     int thread);

// One leaking holder per resource, each wrapping inner[i] (sqllock's fair_lock holder of
// resource_name(i)) for worker thread `thread`, over `db`.
std::vector<std::unique_ptr<test::lock_holder>> leaked_place_holders(
    const run_config& cfg, const database& db, int thread, std::vector<std::unique_ptr<test::lock_holder>> inner);

}  // namespace sqllock::fault
