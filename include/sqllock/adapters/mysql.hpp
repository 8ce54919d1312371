// sqllock/adapters/mysql.hpp — sqllock inside an application's own MySQL Connector/C++ transaction.
//
// Row locks (see sqllock/row_lock.hpp) that join the transaction of a sql::Connection the
// application owns (Connector/C++ 1.1 legacy API, autocommit off): the lock ends when the
// application commits or rolls back, so the lock and the application's writes commit together.
//
//   conn->setAutoCommit(false);
//   sqllock::lock_row(conn, "account:42");        // waits; held until commit/rollback
//   … conn->prepareStatement("UPDATE accounts …") …
//   conn->commit();                               // releases the lock
//
// Take the lock before the transaction's first read (MySQL's default REPEATABLE READ snapshot is
// taken at the first read and cannot see writes committed after it). A refused or timed-out
// attempt rolls back only its own statement, so the transaction stays usable (unless the server
// runs with innodb_rollback_on_timeout); a deadlock rolls back the whole transaction.
// Requires a sqllock built with the Connector/C++ driver. sql::Connection is only declared here,
// to keep Connector/C++'s Boost-based headers out of this one; include them yourself.
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <stop_token>
#include <string_view>
#include <utility>

#include "sqllock/deadline.hpp"
#include "sqllock/lease_claim.hpp"
#include "sqllock/row_lock.hpp"

namespace sql {
class Connection;
}  // namespace sql

namespace sqllock {

namespace detail {
SQLLOCK_API bool mysql_lock_row(sql::Connection* conn, std::string_view name, row_wait_kind wait,
                                std::chrono::steady_clock::time_point deadline, std::string_view table,
                                std::stop_token stop);
}  // namespace detail

// Locks the row of `name` (in "<table>_rows", creating it on first use) in conn's current
// transaction, waiting as long as needed; the lock lasts until conn commits or rolls back. Throws
// invalid_argument for a bad name or table, a null conn, or autocommit on; not_supported on a
// multi-node Galera cluster unless set_caller_row_locks_galera_pinned(true) was called (see
// sqllock/row_lock.hpp: FOR UPDATE is node-local there); schema_error when migration 2 has not
// run on `table`; deadlock (a backend_error: the server rolled back the whole transaction —
// retry it) or another server error; connection_error when the connection broke.
inline void lock_row(sql::Connection* conn, std::string_view name, std::string_view table = default_lock_table) {
  detail::mysql_lock_row(conn, name, detail::row_wait_kind::block, {}, table, {});
}

// Like lock_row, but a stop requested on `stop` ends the wait: returns false, and the transaction
// is still usable, without the lock. sqllock has no connection of its own here to cancel the
// waiting statement from, so the wait runs as bounded attempts, each rolled back alone when it
// times out, and sees a stop between two: within a second (innodb_lock_wait_timeout counts whole
// seconds), plus a round trip. Between two attempts another waiter may be granted first. A stop
// requested before the call leaves one attempt that does not wait. Throws not_supported, before
// waiting, when the server runs with innodb_rollback_on_timeout (an attempt that timed out would
// roll back the whole transaction); otherwise as lock_row.
[[nodiscard]] inline bool lock_row(sql::Connection* conn, std::string_view name, std::stop_token stop,
                                   std::string_view table = default_lock_table) {
  return detail::mysql_lock_row(conn, name, detail::row_wait_kind::block, {}, table, std::move(stop));
}

// Like lock_row, but returns false at once (NOWAIT) when another transaction holds the row.
[[nodiscard]] inline bool try_lock_row(sql::Connection* conn, std::string_view name,
                                       std::string_view table = default_lock_table) {
  return detail::mysql_lock_row(conn, name, detail::row_wait_kind::nowait, {}, table, {});
}

// Like lock_row, but returns false when the row is still held after `timeout`, rounded up to whole
// seconds (innodb_lock_wait_timeout, set for the attempt and restored afterwards).
template <class Rep, class Period>
[[nodiscard]] bool try_lock_row_for(sql::Connection* conn, std::string_view name,
                                    const std::chrono::duration<Rep, Period>& timeout,
                                    std::string_view table = default_lock_table) {
  return detail::mysql_lock_row(conn, name, detail::row_wait_kind::until, detail::steady_deadline_after(timeout), table,
                                {});
}

// try_lock_row_for, ending the wait also on a stop requested on `stop` (see lock_row(conn, name, stop)).
template <class Rep, class Period>
[[nodiscard]] bool try_lock_row_for(sql::Connection* conn, std::string_view name,
                                    const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop,
                                    std::string_view table = default_lock_table) {
  return detail::mysql_lock_row(conn, name, detail::row_wait_kind::until, detail::steady_deadline_after(timeout), table,
                                std::move(stop));
}

// ---- guarded writes (sqllock/lease_claim.hpp)

// Checks `claim` in conn's open transaction (autocommit off) and keeps its rows until it ends (see
// "What every adapter's guard does" in sqllock/lease_claim.hpp). Throws lock_lost when the hold is
// gone; invalid_argument when conn is null or has autocommit on, or the lock's database is not
// MySQL/MariaDB. On a multi-node Galera cluster the guard writes the row (see lease_claim.hpp); the
// server is asked once a minute per connection, as for lock_row.
SQLLOCK_API void guard(sql::Connection* conn, const lease_claim& claim);

// guard(conn, lock.claim()).
inline void guard(sql::Connection* conn, const claimable auto& lock) { guard(conn, lock.claim()); }

}  // namespace sqllock
