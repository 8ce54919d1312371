// sqllock/lease_claim.hpp — a held lease, as a guard checks it inside an application's transaction.
//
// A lease lock alone cannot make a holder's writes safe: a holder paused past its lease (GC, swap,
// SIGSTOP, a stalled network) may wake up and write after another was granted. A guard closes that
// gap for data kept in the lock's own database: in the application's open transaction it checks
// that the lock's row is still this holder's (same owner, same fence, unexpired by the database
// clock at the check) and keeps it so until that transaction ends. Every write committed after a
// successful guard is therefore ordered before the next holder's grant.
//
//   std::lock_guard hold(lock);                 // a table_lock, permit, multi_lock, fair_lock, rw_lock
//   pqxx::work tx(conn);
//   sqllock::guard(tx, lock);                   // throws lock_lost when the lease is gone
//   tx.exec_params("UPDATE invoices SET … WHERE id = $1", id);
//   tx.commit();                                // the row is free to be taken over only now
//
// guard() lives in the adapters (sqllock/adapters/pqxx.hpp, soci.hpp, mysql.hpp); each lock kind's
// claim() gives what it checks. A claim is a snapshot of the caller's current hold: guard it soon,
// in the transaction that writes. docs/design.md ("Guarded writes") has the proof sketch.
#pragma once

#include "sqllock/export.hpp"

#include <concepts>
#include <memory>

namespace sqllock {

namespace detail {
struct claimed_rows;
}

// The caller's hold of a leased lock at the moment claim() was called: the rows it holds (one, or
// one per name of a multi_lock), their owner and fences, and the lock's database. Cheap to copy;
// it keeps the lock's database handle alive.
class SQLLOCK_API lease_claim {
 public:
  explicit lease_claim(std::shared_ptr<const detail::claimed_rows> rows) noexcept;
  const detail::claimed_rows& rows() const noexcept { return *rows_; }

 private:
  std::shared_ptr<const detail::claimed_rows> rows_;
};

// A lock object whose hold a guard can check: table_lock, permit, multi_lock, fair_lock, rw_lock.
template <class Lock>
concept claimable = requires(const Lock& lock) {
  { lock.claim() } -> std::same_as<lease_claim>;
};

// What every adapter's guard(transaction, claim) does (sqllock/adapters/pqxx.hpp, soci.hpp,
// mysql.hpp): inside the application's open transaction, on the lock's own database, it checks
// that each of the claim's rows is still the claim's (same owner, same fence) and unexpired by the
// database clock read by the check itself, and keeps it so until the transaction ends — no
// takeover, release by force or reap of those rows commits before then (PostgreSQL: SELECT … FOR
// SHARE; MySQL/MariaDB: LOCK IN SHARE MODE; SQLite: the transaction becomes the database's
// writer; a multi-node Galera cluster, where a locking read holds back nothing on the other nodes:
// it writes the row, and certification keeps the transaction and a takeover on another node from
// both committing — the second to commit fails with a deadlock error). One statement per row.
// Throws lock_lost when a row is not held any more: roll the transaction back, its writes are not
// protected. Throws invalid_argument when no transaction is open or it runs on a database of
// another dialect; the driver's errors otherwise (a deadlock victim: roll back and retry).
//
// Keep a guarded transaction short and end it before releasing the lock: the handle's renewal of
// its leases, the lock's own release and any takeover wait for it. A transaction open longer than
// the lease delays the renewal, and the holder may then be told its lease is lost although nobody
// could take it over.

}  // namespace sqllock
