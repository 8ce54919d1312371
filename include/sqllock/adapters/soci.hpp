// sqllock/adapters/soci.hpp — sqllock inside an application's own SOCI transaction.
//
// Row locks (see sqllock/row_lock.hpp) that join the transaction open on a soci::session the
// application owns (PostgreSQL or MySQL/MariaDB backends): the lock ends when the application
// commits or rolls back, so the lock and the application's writes commit together.
//
//   soci::transaction tr(sql);
//   sqllock::lock_row(sql, "account:42");         // waits; held until tr ends
//   sql << "UPDATE accounts SET … WHERE id = :id", soci::use(42);
//   tr.commit();                                  // releases the lock
//
// The session must be inside a transaction (soci::transaction, session::begin(), or autocommit
// off on MySQL). Take the lock before the transaction's first read when it runs at REPEATABLE READ
// (MySQL's default) or SERIALIZABLE: a snapshot taken before the lock cannot see the previous
// holder's writes. A refused or timed-out attempt leaves the transaction usable (PostgreSQL: it
// runs in a savepoint that is rolled back; MySQL rolls back only the refused statement, unless the
// server runs with innodb_rollback_on_timeout). The sqlite3 backend has no row locks:
// not_supported. Requires a sqllock built with the SOCI driver. Use the session from one thread at
// a time, as SOCI requires.
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <stop_token>
#include <string_view>
#include <utility>

#include <soci/session.h>

#include "sqllock/deadline.hpp"
#include "sqllock/lease_claim.hpp"
#include "sqllock/row_lock.hpp"

namespace sqllock {

namespace detail {
SQLLOCK_API bool soci_lock_row(soci::session& session, std::string_view name, row_wait_kind wait,
                               std::chrono::steady_clock::time_point deadline, std::string_view table,
                               std::stop_token stop);
}  // namespace detail

// Locks the row of `name` (in "<table>_rows", creating it on first use) in the session's current
// transaction, waiting as long as needed; the lock lasts until that transaction ends. Throws
// invalid_argument for a bad name or table, or when no transaction is open; not_supported for
// backends other than postgresql and mysql, and on a multi-node Galera cluster unless
// set_caller_row_locks_galera_pinned(true) was called (see sqllock/row_lock.hpp); schema_error when migration 2 has not run on `table`;
// deadlock, a backend_error (the message says what was rolled back; on MySQL that is the whole
// transaction — retry it) or another server error; connection_error when the connection broke.
inline void lock_row(soci::session& session, std::string_view name, std::string_view table = default_lock_table) {
  detail::soci_lock_row(session, name, detail::row_wait_kind::block, {}, table, {});
}

// Like lock_row, but a stop requested on `stop` ends the wait: returns false, and the transaction
// is still usable, without the lock. sqllock has no connection of its own here to cancel the
// waiting statement from, so the wait runs as bounded attempts, each rolled back alone when it
// times out, and sees a stop between two: within 250 ms on PostgreSQL, within a second on MySQL
// (innodb_lock_wait_timeout counts whole seconds), plus a round trip. Between two attempts another
// waiter may be granted first. A stop requested before the call leaves one attempt that does not
// wait. Throws not_supported, before waiting, when a MySQL server runs with
// innodb_rollback_on_timeout (an attempt that timed out would roll back the whole transaction);
// otherwise as lock_row.
[[nodiscard]] inline bool lock_row(soci::session& session, std::string_view name, std::stop_token stop,
                                   std::string_view table = default_lock_table) {
  return detail::soci_lock_row(session, name, detail::row_wait_kind::block, {}, table, std::move(stop));
}

// Like lock_row, but returns false at once (NOWAIT) when another transaction holds the row.
[[nodiscard]] inline bool try_lock_row(soci::session& session, std::string_view name,
                                       std::string_view table = default_lock_table) {
  return detail::soci_lock_row(session, name, detail::row_wait_kind::nowait, {}, table, {});
}

// Like lock_row, but returns false when the row is still held after `timeout` (MySQL: rounded up
// to whole seconds). The session's own lock wait setting is restored afterwards.
template <class Rep, class Period>
[[nodiscard]] bool try_lock_row_for(soci::session& session, std::string_view name,
                                    const std::chrono::duration<Rep, Period>& timeout,
                                    std::string_view table = default_lock_table) {
  return detail::soci_lock_row(session, name, detail::row_wait_kind::until, detail::steady_deadline_after(timeout),
                               table, {});
}

// try_lock_row_for, ending the wait also on a stop requested on `stop` (see lock_row(session, name, stop)).
template <class Rep, class Period>
[[nodiscard]] bool try_lock_row_for(soci::session& session, std::string_view name,
                                    const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop,
                                    std::string_view table = default_lock_table) {
  return detail::soci_lock_row(session, name, detail::row_wait_kind::until, detail::steady_deadline_after(timeout),
                               table, std::move(stop));
}

// ---- guarded writes (sqllock/lease_claim.hpp)

// Checks `claim` in the session's open transaction and keeps its rows until it ends (see "What
// every adapter's guard does" in sqllock/lease_claim.hpp), on the postgresql, mysql and sqlite3
// backends. Throws lock_lost when the hold is gone; invalid_argument when no transaction is open
// (the check would end with its own statement) or the lock's database has another dialect;
// not_supported for other backends. SQLite: the guard's write waits for another writer as long as
// the session's busy timeout allows (SOCI's "timeout=" connect option), and in WAL mode a
// transaction that read before its first write fails with SQLITE_BUSY_SNAPSHOT when another
// writer committed since: guard first thing in the transaction, or begin it IMMEDIATE.
SQLLOCK_API void guard(soci::session& session, const lease_claim& claim);

// guard(session, lock.claim()).
inline void guard(soci::session& session, const claimable auto& lock) { guard(session, lock.claim()); }

}  // namespace sqllock
