// The guard: a leased hold (a lease_claim) checked and kept inside an application's own open
// transaction, so that every write that transaction commits is ordered before the next holder's
// grant (sqllock/lease_claim.hpp; docs/design.md "Guarded writes" has the proof sketch). The
// adapters wrap the application's connection and call this; no lock semantics live there.
#pragma once

#include "core/handle/galera_guard.hpp"
#include "driver/connection.hpp"
#include "sqllock/dialect_kind.hpp"
#include "sqllock/lease_claim.hpp"

namespace sqllock::detail {

// Runs the guard statement of each of the claim's rows (dialect/guard_sql.hpp) on `conn`, which is
// inside the caller's transaction on a database of `dialect`. Returns when every row is still the
// claim's (owner and fence) and unexpired by the database clock; from then on no takeover, release
// by force or reap of those rows commits before the transaction ends (a row lock on PostgreSQL and
// MySQL, the write lock on SQLite). On a multi-node Galera cluster (unless
// set_caller_row_locks_galera_pinned(true); `caller` keys the cached answer) it writes the rows
// instead, and certification keeps the transaction and a takeover on another node from both
// committing: the one that commits second fails (a deadlock error). Throws lock_lost when a row is
// not held (the transaction is left to the caller to roll back: what it wrote is not protected);
// invalid_argument when the claim's database has another dialect; what the driver throws otherwise
// (connection_error, backend_error, e.g. SQLite's busy when another writer holds the database past
// the connection's busy timeout).
void guard_in_caller_transaction(connection& conn, dialect_kind dialect, const lease_claim& claim,
                                 const caller_connection& caller = {});

}  // namespace sqllock::detail
