// sqllock/adapters/pqxx.hpp — sqllock inside an application's own libpqxx transaction.
//
// Row locks (see sqllock/row_lock.hpp) that join a pqxx transaction the application already runs:
// the lock is taken with the application's statements and ends when that transaction commits or
// aborts, so the lock and the application's writes commit together.
//
//   pqxx::work tx(conn);
//   sqllock::lock_row(tx, "account:42");          // waits; held until tx ends
//   tx.exec_params("UPDATE accounts SET … WHERE id = $1", 42);
//   tx.commit();                                  // releases the lock
//
// Transaction-level advisory locks (PostgreSQL pg_advisory_xact_lock, see sqllock/advisory_lock.hpp)
// join the transaction the same way: advisory_xact_lock(tx, key) holds the key until tx ends. This
// is the form to use behind PgBouncer in transaction pooling mode.
//
// Guarded writes: guard(tx, lock) checks a held table_lock, permit, multi_lock, fair_lock or rw_lock
// inside tx and keeps it until tx ends, so tx's writes commit before anyone else is granted the
// lock (sqllock/lease_claim.hpp).
//
// Take the lock before the transaction's first read when it runs at REPEATABLE READ or
// SERIALIZABLE: a snapshot taken before the lock cannot see the previous holder's writes.
// A refused or timed-out attempt leaves the transaction usable: it runs inside a savepoint that is
// rolled back. Requires a sqllock built with the libpqxx driver; this is the only sqllock header
// that includes libpqxx. Use the transaction from one thread at a time, as libpqxx requires.
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <optional>
#include <stop_token>
#include <string_view>
#include <utility>

#include <pqxx/transaction_base>

#include "sqllock/advisory_lock.hpp"
#include "sqllock/deadline.hpp"
#include "sqllock/lease_claim.hpp"
#include "sqllock/row_lock.hpp"

namespace sqllock {

namespace detail {
SQLLOCK_API bool pqxx_lock_row(pqxx::transaction_base& tx, std::string_view name, row_wait_kind wait,
                               std::chrono::steady_clock::time_point deadline, std::string_view table,
                               std::stop_token stop);
}  // namespace detail

// Locks the row of `name` (in "<table>_rows", creating it on first use) in `tx`, waiting as long
// as needed; the lock lasts until tx commits or aborts. Throws invalid_argument for a bad name or
// table, or when tx is a pqxx::nontransaction; schema_error when migration 2 has not run on
// `table`; deadlock (a backend_error; the message says so; tx is still usable, but without the
// lock — abort and retry) or another server error; connection_error when the connection broke.
inline void lock_row(pqxx::transaction_base& tx, std::string_view name, std::string_view table = default_lock_table) {
  detail::pqxx_lock_row(tx, name, detail::row_wait_kind::block, {}, table, {});
}

// Like lock_row, but a stop requested on `stop` ends the wait: returns false, and tx is still
// usable, without the lock. sqllock has no connection of its own here to cancel the waiting
// statement from, so the wait runs as attempts of 250 ms each (lock_timeout, each in a savepoint
// rolled back when it times out) and sees a stop between two: within 250 ms, plus a round trip.
// Between two attempts another waiter may be granted first. A stop requested before the call
// leaves one attempt that does not wait.
[[nodiscard]] inline bool lock_row(pqxx::transaction_base& tx, std::string_view name, std::stop_token stop,
                                   std::string_view table = default_lock_table) {
  return detail::pqxx_lock_row(tx, name, detail::row_wait_kind::block, {}, table, std::move(stop));
}

// Like lock_row, but returns false at once (NOWAIT) when another transaction holds the row.
[[nodiscard]] inline bool try_lock_row(pqxx::transaction_base& tx, std::string_view name,
                                       std::string_view table = default_lock_table) {
  return detail::pqxx_lock_row(tx, name, detail::row_wait_kind::nowait, {}, table, {});
}

// Like lock_row, but returns false when the row is still held after `timeout` (lock_timeout, set
// for the attempt only: the transaction's own setting is back in force afterwards).
template <class Rep, class Period>
[[nodiscard]] bool try_lock_row_for(pqxx::transaction_base& tx, std::string_view name,
                                    const std::chrono::duration<Rep, Period>& timeout,
                                    std::string_view table = default_lock_table) {
  return detail::pqxx_lock_row(tx, name, detail::row_wait_kind::until, detail::steady_deadline_after(timeout), table,
                               {});
}

// try_lock_row_for, ending the wait also on a stop requested on `stop` (see lock_row(tx, name, stop)).
template <class Rep, class Period>
[[nodiscard]] bool try_lock_row_for(pqxx::transaction_base& tx, std::string_view name,
                                    const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop,
                                    std::string_view table = default_lock_table) {
  return detail::pqxx_lock_row(tx, name, detail::row_wait_kind::until, detail::steady_deadline_after(timeout), table,
                               std::move(stop));
}

// ---- transaction-level advisory locks (PostgreSQL)

namespace detail {
// deadline: nullopt waits as long as tx's own lock_timeout allows; a time already past does not wait.
SQLLOCK_API bool pqxx_advisory_xact_lock(pqxx::transaction_base& tx, const advisory_key& key, advisory_mode mode,
                                         std::optional<std::chrono::steady_clock::time_point> deadline,
                                         std::stop_token stop);
}  // namespace detail

// Takes pg_advisory_xact_lock(key) (or the shared form) in tx, waiting as long as needed (tx's own
// lock_timeout and statement_timeout still apply); held until tx commits or aborts — there is no
// unlock. Re-entrant within tx, like every PostgreSQL advisory lock. Throws invalid_argument when tx
// is a pqxx::nontransaction (the lock would end with the statement); deadlock (a backend_error)
// (40P01) or another server error, after which tx is still usable, without the lock;
// connection_error when the connection broke.
inline void advisory_xact_lock(pqxx::transaction_base& tx, const advisory_key& key,
                               advisory_mode mode = advisory_mode::exclusive) {
  detail::pqxx_advisory_xact_lock(tx, key, mode, std::nullopt, {});
}
inline void advisory_xact_lock(pqxx::transaction_base& tx, std::string_view name,
                               advisory_mode mode = advisory_mode::exclusive) {
  advisory_xact_lock(tx, advisory_key::from_name(name), mode);
}

// Like advisory_xact_lock, but a stop requested on `stop` ends the wait: returns false, and tx is
// still usable, without the lock. As for lock_row(tx, name, stop), the wait runs as attempts of
// 250 ms each, each in a savepoint, and sees a stop between two; another waiter may be granted
// between them. A stop requested before the call leaves one attempt that does not wait.
[[nodiscard]] inline bool advisory_xact_lock(pqxx::transaction_base& tx, const advisory_key& key, std::stop_token stop,
                                             advisory_mode mode = advisory_mode::exclusive) {
  return detail::pqxx_advisory_xact_lock(tx, key, mode, std::nullopt, std::move(stop));
}
[[nodiscard]] inline bool advisory_xact_lock(pqxx::transaction_base& tx, std::string_view name, std::stop_token stop,
                                             advisory_mode mode = advisory_mode::exclusive) {
  return advisory_xact_lock(tx, advisory_key::from_name(name), std::move(stop), mode);
}

// Like advisory_xact_lock, but returns false at once (pg_try_advisory_xact_lock) when another
// session holds the key.
[[nodiscard]] inline bool try_advisory_xact_lock(pqxx::transaction_base& tx, const advisory_key& key,
                                                 advisory_mode mode = advisory_mode::exclusive) {
  return detail::pqxx_advisory_xact_lock(tx, key, mode, std::chrono::steady_clock::time_point::min(), {});
}
[[nodiscard]] inline bool try_advisory_xact_lock(pqxx::transaction_base& tx, std::string_view name,
                                                 advisory_mode mode = advisory_mode::exclusive) {
  return try_advisory_xact_lock(tx, advisory_key::from_name(name), mode);
}

// Like advisory_xact_lock, but returns false when the key is still held elsewhere after `timeout`
// (lock_timeout, set for the attempt only; the attempt runs in a savepoint, so tx stays usable and
// a lock granted just as the timeout fired is released with it).
template <class Rep, class Period>
[[nodiscard]] bool try_advisory_xact_lock_for(pqxx::transaction_base& tx, const advisory_key& key,
                                              const std::chrono::duration<Rep, Period>& timeout,
                                              advisory_mode mode = advisory_mode::exclusive) {
  return detail::pqxx_advisory_xact_lock(tx, key, mode, detail::steady_deadline_after(timeout), {});
}

// try_advisory_xact_lock_for, ending the wait also on a stop requested on `stop` (see
// advisory_xact_lock(tx, key, stop)).
template <class Rep, class Period>
[[nodiscard]] bool try_advisory_xact_lock_for(pqxx::transaction_base& tx, const advisory_key& key,
                                              const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop,
                                              advisory_mode mode = advisory_mode::exclusive) {
  return detail::pqxx_advisory_xact_lock(tx, key, mode, detail::steady_deadline_after(timeout), std::move(stop));
}

// ---- guarded writes (sqllock/lease_claim.hpp)

// Checks `claim` inside tx and keeps its rows until tx ends (see "What every adapter's guard does"
// in sqllock/lease_claim.hpp). Throws lock_lost when the hold is gone; invalid_argument when tx is
// a pqxx::nontransaction (the row lock would end with the statement) or the lock's database is not
// PostgreSQL. Works behind PgBouncer in transaction mode: it is one statement of tx.
SQLLOCK_API void guard(pqxx::transaction_base& tx, const lease_claim& claim);

// guard(tx, lock.claim()).
inline void guard(pqxx::transaction_base& tx, const claimable auto& lock) { guard(tx, lock.claim()); }

}  // namespace sqllock
