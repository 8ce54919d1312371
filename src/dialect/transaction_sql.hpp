// The statements of transactions, savepoints and lock wait settings, shared by every statement
// bundle that needs them (dialect_sql, admin_sql, row_lock_sql, advisory_sql). The core's
// transaction toolkit (core/handle/transaction.hpp) runs them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

// BEGIN / COMMIT / ROLLBACK of a transaction sqllock runs itself (exec_direct).
struct transaction_sql {
  std::string begin = "BEGIN";
  std::string commit = "COMMIT";
  std::string rollback = "ROLLBACK";
};

// A savepoint inside a transaction (exec_direct): create, keep (release), undo (rollback_to, which
// keeps the savepoint; release it after).
struct savepoint_sql {
  std::string create;
  std::string release;
  std::string rollback_to;
};

// The savepoint statements for `name` (an identifier, not quoted).
savepoint_sql make_savepoint_sql(std::string_view name);

// A setting that bounds how long a statement waits for a lock: PostgreSQL lock_timeout, MySQL
// innodb_lock_wait_timeout.
struct lock_wait_sql {
  std::int64_t unit_ms = 1;        // what one unit of `set` is, in milliseconds
  std::int64_t min = 1;            // smallest value for a bounded wait (PostgreSQL: 0 means no limit)
  std::int64_t max = 1;            // largest value the server accepts; longer waits are cut to it
  std::int64_t shortest = 1;       // the value closest to NOWAIT, for statements that lack NOWAIT
  std::int64_t unlimited = 0;      // the value that means "no limit"
  bool transaction_local = false;  // reverts by itself with a rollback (PostgreSQL SET LOCAL)
  std::string get;                 // → one row: the current setting, as text for `restore`
  std::string set;                 // $1 = the wait as an integer number of units
  std::string restore;             // $1 = a text `get` returned
  // When not empty, undoing a change runs this (exec_direct) instead of reading the old value
  // first and restoring it.
  std::string reset;
};

// PostgreSQL lock_timeout, in milliseconds: for the current transaction only (SET LOCAL through
// set_config, undone by a rollback to a savepoint) or for the session, undone by RESET.
lock_wait_sql postgresql_lock_wait(bool transaction_local);

// Cancelling the statement another session of the same user runs — a lock wait — from a connection
// of its own (core/wait/statement_cancel.hpp). The server ignores a request for a session that
// runs no statement; the session itself lives on, with every lock it holds.
struct statement_cancel_sql {
  std::string session_id;  // → one row, one field: this session's id on the server
  std::string cancel;      // $1 a session id → cancels the statement that session runs
};

// PostgreSQL: pg_backend_pid(), pg_cancel_backend (allowed for the session's own role);
// MySQL/MariaDB: CONNECTION_ID(), KILL QUERY (a user may kill its own sessions' statements; KILL
// takes the id as a parameter); SQLite, whose waits are the client's own: both empty.
const statement_cancel_sql& statement_cancel_statements(dialect_kind kind);

}  // namespace sqllock::detail
