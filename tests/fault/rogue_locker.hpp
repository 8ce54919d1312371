// The deliberately unsafe peers of the negative controls, as raw SQL a careless client could
// send (the library has no unsafe mode); the checkers must catch them.
//
// "Release without the owner/fence match" (unsafe_release_holders): a peer that releases with
// DELETE … WHERE resource = ? and only then lets sqllock tidy up its own state. It believes it
// released when its DELETE removed a row — perhaps another holder's.
//
// "Client-clock expiry" (client_clock_holders): a peer that shares sqllock's lock table but
// decides that a lease ran out by its own clock — which runs 5 leases fast, like a host with a
// skewed clock — and then takes the row over with raw SQL (a compare-and-set on the fence it
// read). sqllock's lockers around it are unchanged; the checkers must see the overlapping grants.
// PostgreSQL only (it draws fences from sqllock's sequence).
//
// "Count then insert" (count_then_insert_holders): a semaphore that counts the name's live
// permits with a plain SELECT COUNT(*) and, when fewer than N, inserts its own permit row in a
// separate statement — after a short random sleep that widens the window between the two. Its
// rows take a fresh slot number >= N (the CHECK's `permits` set above it), so the primary key
// never stops it: exactly the counting bug of research T1. sqllock's semaphore holders around it
// are unchanged; server-overcommit must see more than N live permits of a name. PostgreSQL only.
#pragma once

#include <memory>
#include <vector>

#include "fault/config.hpp"
#include "support/lock_kinds.hpp"

namespace sqllock::fault {

// `table_holders` (table_lock holders, holders[i] of resource_name(i)) releasing the unsafe way
// first: each reports its own DELETE's outcome (ok when it removed a row) instead of sqllock's.
std::vector<std::unique_ptr<test::lock_holder>> unsafe_release_holders(
    const database& db, std::vector<std::unique_ptr<test::lock_holder>> table_holders);

// One client-clock peer per resource (holders[i] of resource_name(i)), over `db`.
std::vector<std::unique_ptr<test::lock_holder>> client_clock_holders(const run_config& cfg, const database& db);

// One count-then-insert peer per resource (holders[i] of resource_name(i)), over `db`; its
// sections are slot_sections (fault/semaphore_holder.hpp) of its own slot.
std::vector<std::unique_ptr<test::lock_holder>> count_then_insert_holders(const run_config& cfg, const database& db);

}  // namespace sqllock::fault
