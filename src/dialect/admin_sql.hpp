// The SQL of the operator functions — the reaper, status and forced release — per dialect, with
// the lock table name filled in. Kept apart from dialect_sql (the lock statements) so that the
// two change independently; the core decides what to run and in which transaction.
//
// Every statement that lists lock rows returns the same columns, in this order (kLockColumns):
//   resource, owner_token, holder_host, holder_pid, holder_thread, count, fence,
//   acquired_at (UTC text 'YYYY-MM-DDTHH:MM:SS.mmmZ'), expires_in_ms (signed; by the database
//   clock), expired (1 when expires_at <= now, the predicate acquire and the reaper use; else 0).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "dialect/lease_table.hpp"
#include "dialect/transaction_sql.hpp"
#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

inline constexpr std::size_t kLockColumns = 10;

// Its transaction statements (transaction_sql) run reap batches and forced releases that need one.
struct admin_sql : transaction_sql {
  dialect_kind kind{};

  // ---- reaper: delete at most $1 rows whose lease ended at least $2 ms ago, skipping rows that
  // other transactions hold locked, and re-checking expiry on each row it deletes.
  // One statement (PostgreSQL, SQLite): reap_batch ($1 batch, $2 grace ms) → one row per
  // candidate it took, "1" when deleted, "0" when it was renewed meanwhile (rows work with every
  // driver; libpq reports no affected count for WITH … DELETE). SQLite has one writer: all "1".
  // Otherwise (MySQL, reap_in_transaction): reap_isolation and begin, then reap_select ($1 batch,
  // $2 grace ms, $3 the expires_at text to resume from) locks and returns the candidates' primary
  // keys (reap_key_columns fields) and expires_at texts in expires_at order, reap_delete ($1 grace
  // ms, then reap_delete_keys keys of reap_key_columns values each, NULL-padded) deletes exactly
  // those rows in chunks, then commit. reap_resume_start is the $3 of a pass's first batch
  // (before every stored time).
  bool reap_in_transaction = false;
  std::string reap_batch;
  std::string reap_isolation;  // exec_direct before `begin`; empty when not needed
  std::string reap_select;
  std::string reap_delete;
  std::size_t reap_delete_keys = 0;
  std::size_t reap_key_columns = 1;
  std::string reap_resume_start;

  // ---- status
  std::string list_locks;  // → every lock row, kLockColumns each, ordered by resource
  // $1 resource (then the scope values, see scope_params) → that row, or none
  std::string find_lock;
  // PostgreSQL: the advisory locks of the current database in pg_locks →
  // (pid or NULL, key1, key2 or NULL, mode, granted 0/1); empty for other dialects.
  std::string advisory_locks;

  // ---- forced release of one row whatever its owner.
  // One statement (force_release_in_transaction false): force_release ($1 resource, and $2 the
  // wake-up channel when the dialect has one, then the scope values) deletes the row and returns
  // it (kLockColumns). Otherwise, inside begin/commit: force_release_select ($1, then the scope
  // values) locks and returns the row, then force_release (the same parameters) deletes it.
  bool force_release_in_transaction = false;
  std::string force_release_select;
  std::string force_release;

  // How many values the by-resource statements (find_lock, force_release_select, force_release)
  // take after their others to narrow them down: 0, or 2 for the queue (its rows of kinds IN the
  // two values: 'F', 'R' for both kinds, the same kind twice for one).
  std::size_t scope_params = 0;
};

// The lease table the statements work on (dialect/lease_table.hpp): the lock table; its semaphore
// permits, whose rows list kLockColumns (count 1) and then slot and permits (kPermitColumns in
// all); or its wait queue, whose rows list kLockColumns — count = write + read levels, fence =
// ticket, acquired_at = enqueued_at — then kind, write_count and read_count (kQueueColumns),
// ordered by resource, kind and ticket. find_lock and force_release then cover every slot, or
// every entry (of the scope's kinds), of the resource.
inline constexpr std::size_t kPermitColumns = kLockColumns + 2;
inline constexpr std::size_t kQueueColumns = kLockColumns + 3;

// The operator statements for `kind` on the (validated, unquoted) lock table `table`.
std::shared_ptr<const admin_sql> make_admin_sql(dialect_kind kind, const std::string& table,
                                                lease_table which = lease_table::locks);

}  // namespace sqllock::detail
