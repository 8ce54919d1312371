// The SQL text and capabilities of one dialect, with the lock table name already filled in.
//
// The core decides what to do; a dialect says how to say it in SQL. Every statement uses $1, $2 …
// placeholders (see driver/placeholders.hpp); values are never spliced into the text.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "dialect/transaction_sql.hpp"
#include "sqllock/dialect_kind.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

// The statements a connection runs once, right after it is opened and before sqllock's first
// statement on it. MySQL: strict mode, so an over-long value is an error instead of being
// truncated into another lock's name, and UTC, so NOW() and times read back as text mean the same
// everywhere. PostgreSQL: the backend checks every second, while a statement runs, whether its
// client closed the connection (client_connection_check_interval, PostgreSQL 14 and later; older
// servers skip it), so a statement cut off at its bound does not go on waiting for a lock. Empty
// for SQLite.
std::span<const std::string_view> session_setup(dialect_kind kind) noexcept;

// How a statement cut off at its bound by the client (driver/bounded_connection) is stopped on the
// server too, where the server does not notice a closed client during a lock wait (MariaDB, MySQL):
// `session_id` is read once when the connection opens; `stop`, sent on a new connection with $1 =
// that id, ends the statement the cut-off connection was running. Empty elsewhere (PostgreSQL
// checks for itself, see session_setup).
struct statement_stopper {
  std::string_view session_id;
  std::string_view stop;
};
statement_stopper cut_off_statement_stopper(dialect_kind kind) noexcept;

// What a backend_error means to the core, independent of dialect.
enum class error_kind {
  other,
  undefined_table,     // the lock table or history table does not exist: run migrate
  lock_not_available,  // NOWAIT failed or lock_timeout / innodb_lock_wait_timeout fired
  deadlock,            // the server chose this statement as a deadlock victim (its transaction
                       // rolled back, or for GET_LOCK the wait refused)
  serialization,       // the server rolled back the transaction: it could not be serialised
                       // with a concurrent one (PostgreSQL 40001)
  busy,                // SQLite BUSY / LOCKED after the busy timeout: the statement failed, but an
                       // open transaction was not rolled back (so not a transaction rollback)
  query_canceled,      // statement_timeout (or a cancel request) ended the statement
  no_transaction,      // the statement needs an open transaction and there is none
};

// Its transaction statements (transaction_sql) are those of sqllock's own transactions.
struct dialect_sql : transaction_sql {
  dialect_kind kind{};
  std::string dir_name;  // migrations/<dir_name>/

  // ---- capabilities
  bool transactional_ddl = false;  // DDL can be rolled back with the transaction

  // ---- migrations
  // When true, migration_lock starts a transaction that serialises all migrations (SQLite's
  // BEGIN IMMEDIATE; PostgreSQL's BEGIN and pg_advisory_xact_lock) and migration_unlock commits
  // it; every migration then runs inside it.
  bool migration_lock_is_transaction = false;
  std::string migration_lock;  // one per database; one row whose first field is "1" when taken
  std::string migration_unlock;
  std::string create_history;  // creates sqllock_schema_migrations if missing
  std::string select_history;  // $1 = lock table → rows (version, name, checksum), by version
  std::string insert_history;  // $1 = lock table, $2 = version, $3 = name, $4 = checksum

  // ---- table locks
  // acquire: $1 resource, $2 owner token, $3 holder session, $4 host, $5 pid, $6 thread,
  // $7 lease ms, $8 auto_renew (0/1). Inserts, re-enters (same owner, live lease: count + 1, same
  // fence) or takes over an expired row (count 1, new fence), in one statement. Returns
  // (count, fence) when acquired and nothing when another owner holds a live lease — unless
  // acquire_reads_back, when it returns no rows and reports success as affected rows > 0, and
  // acquire_readback ($1 resource, $2 owner) then reads (count, fence).
  std::string acquire;
  bool acquire_reads_back = false;
  std::string acquire_readback;
  // $1 resource → (milliseconds left of its lease, ≥ 0); no row when there is none.
  std::string lease_remaining;
  // $1 resource, $2 owner, $3 fence, $4 expected count (> 1) → affected 1 when decremented.
  std::string release_decrement;
  // $1 resource, $2 owner, $3 fence, $4 wake-up channel (PostgreSQL only) → one row or affected
  // 1 when deleted. Deletes whatever the count: used for the last level and for orphans.
  std::string release_delete;
  // $1 holder session: extends every live auto-renew lease of the session by its lease_ms.
  // Returns (resource, owner, fence) of each lease still held — unless renew_reads_back, when
  // renew_readback ($1 holder session) reads them.
  std::string renew;
  bool renew_reads_back = false;
  std::string renew_readback;

  // ---- wake-ups (PostgreSQL LISTEN/NOTIFY); empty channel when the dialect has none.
  std::string wakeup_channel;
  // $1 resource: registers that the listening session has waiters of the resource (true when it
  // did; false: a release is committing meanwhile, try again shortly), so that its releases
  // NOTIFY; and unregisters it. A release sends no NOTIFY while no session has registered.
  std::string wakeup_register;
  std::string wakeup_unregister;
};

// The statements for `kind` and the (validated, unquoted) lock table name.
std::shared_ptr<const dialect_sql> make_dialect_sql(dialect_kind kind, const std::string& table);

// Classifies a server error for the core (SQLSTATE, vendor code, or message for SQLite).
error_kind classify(dialect_kind kind, const backend_error& e);

// One builder per dialect, in dialect/<name>.cpp.
dialect_sql make_postgresql_sql(const std::string& table);
dialect_sql make_mysql_sql(const std::string& table);
dialect_sql make_sqlite_sql(const std::string& table);

}  // namespace sqllock::detail
