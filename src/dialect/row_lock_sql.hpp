// The SQL of row locks (SELECT … FOR UPDATE on a resource's row) per dialect, with the table name
// filled in. Kept apart from dialect_sql: row locks use their own table, `<table>_rows` (created
// by migration 0002), whose rows hold nothing but the resource name and are never deleted, so
// they never share rows with table locks and the reaper never touches them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dialect/transaction_sql.hpp"
#include "sqllock/dialect_kind.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

struct row_lock_sql {
  dialect_kind kind{};

  // ---- capabilities
  // False for SQLite, which locks whole databases, never rows.
  bool supported = false;
  // Where sqllock's own transactions make sure the row exists. MySQL: before BEGIN, in autocommit,
  // because an INSERT that meets an existing key keeps a lock on it until the transaction ends
  // (held by nobody once the statement commits on its own). PostgreSQL: inside the transaction,
  // where SET LOCAL bounds its wait; ON CONFLICT DO NOTHING takes no row lock, so it costs nothing.
  bool ensure_before_begin = false;
  // A failed statement aborts the whole transaction (PostgreSQL): locking in a caller's transaction
  // then runs inside a savepoint, so that a refused NOWAIT or a timeout leaves it usable.
  bool errors_abort_transaction = false;
  // Whether the probe may run inside a caller's transaction. Not on MySQL: its plain read would fix
  // a REPEATABLE READ snapshot before the lock is granted, hiding the previous holder's writes from
  // the caller's later reads. There the ensure statement runs directly (it does not read a snapshot).
  bool probe_in_caller_transaction = false;

  // ---- statements; $1 is the resource name in each
  std::string probe;        // → a row when the resource's row exists; a plain read that never waits
  std::string ensure;       // inserts the row unless it exists; waits only for a concurrent insert of it
  std::string lock;         // → the row, locked until the transaction ends; waits (bounded below)
  std::string lock_nowait;  // the same, or a lock_not_available error at once
  // → "1" when a lock wait timeout rolls back the caller's whole transaction, not only the statement
  // (MySQL's innodb_rollback_on_timeout); empty where it never does (PostgreSQL: a savepoint).
  std::string timeout_ends_transaction;

  // ---- bounding lock waits: the session's (MySQL) or the transaction's (PostgreSQL) setting
  lock_wait_sql lock_wait;

  // ---- the savepoint a caller's transaction is locked in (used when errors_abort_transaction)
  savepoint_sql savepoint;
};

// The row-lock statements for `kind` and the (validated, unquoted) lock table name. Cached: the
// same object for the same arguments. SQLite gets an object with supported == false.
std::shared_ptr<const row_lock_sql> row_lock_statements(dialect_kind kind, const std::string& table);

// True when `e` says that a statement which needs a transaction ran outside one (PostgreSQL's
// SAVEPOINT in autocommit: SQLSTATE 25P01).
bool is_no_transaction_error(dialect_kind kind, const backend_error& e);

}  // namespace sqllock::detail
