// Row-lock semantics over the driver seam: make sure the resource's row exists, then lock it
// FOR UPDATE, waiting as asked. Used by with_row_lock (sqllock's own transaction on a pooled
// connection) and by the adapters (the caller's transaction, wrapped as a connection).
//
// The row must exist before FOR UPDATE: PostgreSQL locks nothing when it is missing, and InnoDB
// takes a gap lock that two sessions can share (both "win", then deadlock when they insert).
// So a plain read looks for the row first and, only when it is missing, an idempotent insert
// creates it (MySQL in a caller's transaction skips the read, see row_lock_sql.hpp); a lock that
// still finds no row (someone deleted it) is retried or reported.
#pragma once

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "core/handle/galera_guard.hpp"
#include "core/handle/transaction.hpp"
#include "dialect/dialect.hpp"
#include "dialect/row_lock_sql.hpp"
#include "driver/connection.hpp"
#include "sqllock/row_lock.hpp"

namespace sqllock::detail {

class database_impl;

// How long to wait for a row held by another transaction.
struct row_wait {
  row_wait_kind kind = row_wait_kind::block;
  std::chrono::steady_clock::time_point deadline{};  // for row_wait_kind::until
  // A stop on `stop` ends a wait as a timeout does: the waiting statement is cancelled through a
  // connection of `cancel_via`'s pool (core/wait/statement_cancel.hpp). Without one (the
  // adapters, a transaction-mode pooler) the callers wait in slices and see a stop between them.
  std::stop_token stop{};
  database_impl* cancel_via = nullptr;
};

// Throws invalid_argument for a bad lock name (see lock_name.hpp) and not_supported when the
// dialect has no row locks.
void check_row_lock_request(const row_lock_sql& sql, std::string_view name);

// sqllock's own transaction on `conn`, which must be in autocommit: makes sure the row exists,
// begins a transaction (dialect's BEGIN) and locks the row. Returns the transaction, open with the
// row locked and the connection's lock wait setting as it was; nullopt when the row is held
// elsewhere (NOWAIT refused or the wait timed out), with the transaction rolled back.
// Throws like lock_in_transaction, after rolling back.
std::optional<transaction> begin_row_locked(connection& conn, const dialect_sql& dialect, const row_lock_sql& sql,
                                            const std::string& name, const row_wait& wait);

// The caller's transaction, open on `conn`: makes sure the row exists and locks it there, until
// that transaction ends. Returns false when the row is held elsewhere; the caller's transaction is
// then still usable (PostgreSQL: the attempt ran in a savepoint, rolled back; MySQL: a refused or
// timed-out lock rolls back only its own statement). The lock wait setting is restored either way.
// Throws invalid_argument when no transaction is open (where the server can tell: PostgreSQL),
// schema_error when the row table is missing, deadlock or serialization_failure for a victim (on
// MySQL the server has rolled back the caller's whole transaction), backend_error for other server
// errors, connection_error when the connection broke.
bool lock_in_transaction(connection& conn, const row_lock_sql& sql, const std::string& name, const row_wait& wait);

// The adapters' entry point: checks `table` (as database_options::table) and `name`, refuses a
// multi-node Galera cluster (galera_guard.hpp; `caller` keys its cache), then lock_in_transaction
// on the caller's connection (PostgreSQL is never asked, so its adapter passes no `caller`).
// Throws like lock_in_transaction, plus invalid_argument for a bad table name and not_supported for
// SQLite and for a Galera cluster.
bool lock_row_in_caller_transaction(connection& conn, dialect_kind dialect, std::string_view table,
                                    std::string_view name, const row_wait& wait, const caller_connection& caller = {});

}  // namespace sqllock::detail
