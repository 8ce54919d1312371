// The SQL of multi_lock (several lock-table rows taken all or none per attempt) per dialect, with
// the table name filled in. Its rows are ordinary lock rows: the same columns, re-entry, take-over
// and fence rules as dialect_sql::acquire, and released, renewed and reaped by the statements of
// dialect_sql. What differs is only how one attempt takes several names at once:
//
//   SQLite      one statement: a multi-row upsert guarded by NOT EXISTS (a live row of another
//               owner among the names); the single writer makes guard and upsert atomic.
//   PostgreSQL  a transaction: one statement takes the names' advisory xact locks in the given
//               order before it draws fences and reads the clock, and upserts every name; the
//               core commits only when every name came back.
//   MySQL       a transaction: the multi-row INSERT … ON DUPLICATE KEY UPDATE of the single
//               acquire, a read-back of the rows now owned by the caller, commit only when every
//               name came back.
//
// Names are bound as parameters; the text depends on how many there are, so it is built once per
// (dialect, table, number of names) and cached.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

struct multi_lock_sql {
  dialect_kind kind{};
  std::size_t names = 0;  // how many names every statement below takes

  // ---- how one attempt runs
  // The acquire runs inside BEGIN … COMMIT (dialect_sql's statements), committed only when every
  // name was granted and rolled back otherwise. False: acquire is one statement in autocommit
  // that grants every name or none by itself (SQLite).
  bool in_transaction = false;
  // acquire returns no rows; its affected-row count is 0 when nothing was granted, and readback
  // then returns the granted rows (MySQL).
  bool reads_back = false;

  // acquire: $1 owner token, $2 holder session, $3 host, $4 pid, $5 thread, $6 lease ms,
  // $7 auto_renew (0/1), $8 … $(7+names) the names, sorted by bytes. For every name: inserts,
  // re-enters (same owner, live lease: count + 1, same fence) or takes over an expired row (count
  // 1, new fence), in the order given. Returns (resource, count, fence) of each name granted.
  std::string acquire;
  // readback: $1 owner token, $2 … $(1+names) the names → (resource, count, fence) of the names
  // the owner holds now.
  std::string readback;
  // lease_remaining: $1 owner token, $2 … $(1+names) the names → one row: the milliseconds left
  // (≥ 0) of the earliest live lease among the rows of other owners, NULL when no name is held by
  // another owner's live lease. A plain read: it takes no lock and writes nothing.
  std::string lease_remaining;
};

// The statements for `kind`, the (validated, unquoted) lock table name and `names` names (≥ 1).
// Cached: the same object for the same arguments.
std::shared_ptr<const multi_lock_sql> multi_lock_statements(dialect_kind kind, const std::string& table,
                                                            std::size_t names);

}  // namespace sqllock::detail
