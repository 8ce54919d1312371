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

#include "dialect/transaction_sql.hpp"
#include "sqllock/database.hpp"

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
  // $2 grace ms, $3 the expires_at text to resume from) locks and returns the candidates'
  // resources and expires_at texts in expires_at order, reap_delete ($1 grace ms, then
  // reap_delete_keys resources, NULL-padded) deletes them in chunks, then commit.
  // reap_resume_start is the $3 of a pass's first batch (before every stored time).
  bool reap_in_transaction = false;
  std::string reap_batch;
  std::string reap_isolation;  // exec_direct before `begin`; empty when not needed
  std::string reap_select;
  std::string reap_delete;
  std::size_t reap_delete_keys = 0;
  std::string reap_resume_start;

  // ---- status
  std::string list_locks;  // → every lock row, kLockColumns each, ordered by resource
  std::string find_lock;   // $1 resource → that row, or none
  // PostgreSQL: the advisory locks of the current database in pg_locks →
  // (pid or NULL, key1, key2 or NULL, mode, granted 0/1); empty for other dialects.
  std::string advisory_locks;

  // ---- forced release of one row whatever its owner.
  // One statement (force_release_in_transaction false): force_release ($1 resource, and $2 the
  // wake-up channel when the dialect has one) deletes the row and returns it (kLockColumns).
  // Otherwise, inside begin/commit: force_release_select ($1) locks and returns the row, then
  // force_release ($1) deletes it.
  bool force_release_in_transaction = false;
  std::string force_release_select;
  std::string force_release;

};

// Which lease table the statements work on: the lock table, or its semaphore permits
// (`<table>_permits`), whose rows list kLockColumns (count 1) and then slot and permits
// (kPermitColumns in all); find_lock and force_release then cover every slot of the resource.
enum class admin_table { locks, permits };
inline constexpr std::size_t kPermitColumns = kLockColumns + 2;

// The operator statements for `kind` on the (validated, unquoted) lock table `table`.
std::shared_ptr<const admin_sql> make_admin_sql(dialect_kind kind, const std::string& table,
                                                admin_table which = admin_table::locks);

}  // namespace sqllock::detail
