// sqllock/row_lock.hpp — a lock that lives exactly as long as a database transaction
// (SELECT … FOR UPDATE on the resource's row). PostgreSQL and MySQL/MariaDB; not SQLite.
//
// Use it when work under the lock is itself a database write: the caller's writes and the lock
// commit (or roll back) together, and a holder that dies mid-way — crash, SIGKILL, lost network —
// releases the lock the moment the server ends its session. There is no lease, no fencing token and
// no renewal; the price is one connection pinned for as long as the lock is held.
//
//   sqllock::database db("postgresql://app@db/app");
//   sqllock::with_row_lock(db, "account:42", [&](sqllock::row_lock_tx& tx) {
//     auto r = tx.exec("SELECT balance FROM accounts WHERE id = $1", {42});
//     tx.exec("UPDATE accounts SET balance = $1 WHERE id = $2", {new_balance(r), 42});
//   });  // commits on return; rolls back (and rethrows) if the function throws
//
// Applications that run their own transaction join it instead (sqllock/adapters/pqxx.hpp, soci.hpp,
// mysql.hpp: sqllock::lock_row(tx, "account:42")); the lock then ends with their commit/rollback.
//
// The locked rows live in "<table>_rows" (migration 2), one per name ever locked; they are never
// deleted and are unrelated to table_lock's rows of the same name: a row lock and a table_lock
// named alike do not exclude each other. Names follow table_lock's rules (1–255 bytes of UTF-8).
//
// Not re-entrant: locking a name the calling thread already holds through with_row_lock on the
// same handle throws invalid_argument (the inner call would wait for the outer one forever).
// Waiting on MySQL/MariaDB counts whole seconds: a timeout is rounded up to the next second.
//
// Galera: on a MariaDB Galera cluster (or Percona XtraDB Cluster) FOR UPDATE locks only on the node
// that runs it — a transaction on another node locks the same row at once — so row locks throw
// not_supported when the server is a node of a cluster of more than one node. Use table_lock there,
// which is safe on Galera. If every client of the row locks connects to the same node, say so: add
// ?galera=pinned to the URI (with_row_lock), or call set_caller_row_locks_galera_pinned(true) (the
// adapters' lock_row). A handle asks the server once, on its first named or row lock; the adapters
// ask once a minute per application connection (two SHOW statements; a server without Galera
// answers the first). PostgreSQL is never asked.
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <stop_token>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sqllock/database.hpp"
#include "sqllock/deadline.hpp"
#include "sqllock/scoped_result.hpp"

namespace sqllock {

// A bound parameter of row_lock_tx::exec: SQL NULL (std::monostate{}), an integer or a text.
using sql_value = std::variant<std::monostate, std::int64_t, std::string>;

// What row_lock_tx::exec returns: every field as the server's text, std::nullopt for NULL.
struct sql_result {
  std::vector<std::vector<std::optional<std::string>>> rows;
  // Rows inserted, updated or deleted; 0 for queries.
  std::uint64_t affected = 0;
};

// The lock table a caller-transaction lock uses when none is named (database_options::table's
// default).
inline constexpr std::string_view default_lock_table = "distributed_lock";

class row_lock_tx;

namespace detail {
class connection;
struct row_lock_tx_access;
enum class row_wait_kind { block, nowait, until };
// Runs `body` under the lock, in one transaction (see with_row_lock); false when not acquired.
SQLLOCK_API bool run_row_locked(const database& db, std::string_view name, row_wait_kind wait,
                                std::chrono::steady_clock::time_point deadline, std::stop_token stop,
                                const std::function<void(row_lock_tx&)>& body);
}  // namespace detail

// The transaction a row lock is held in, handed to with_row_lock's function. Valid only during that
// call and only on the calling thread.
class SQLLOCK_API row_lock_tx {
 public:
  row_lock_tx(const row_lock_tx&) = delete;
  row_lock_tx& operator=(const row_lock_tx&) = delete;

  // Runs one statement in the lock's transaction. Placeholders are $1, $2 … (a number may repeat),
  // whatever the database; values are always bound, never spliced into the text. Do not COMMIT,
  // ROLLBACK or BEGIN here: with_row_lock ends the transaction (throw to roll back).
  // Throws backend_error for what the server refuses — deadlock or serialization_failure when it
  // chose this transaction as a victim (retry the whole with_row_lock call); connection_error when
  // the connection broke (the transaction and the lock are gone). After a failed statement on PostgreSQL, or a deadlock
  // anywhere, the transaction cannot commit: with_row_lock then rolls back and throws even if the
  // function returns normally.
  sql_result exec(std::string_view sql, std::initializer_list<sql_value> params = {});
  sql_result exec(std::string_view sql, std::span<const sql_value> params);

  // The locked name.
  const std::string& name() const noexcept { return name_; }
  // The database's dialect, for callers that write dialect-specific SQL.
  dialect_kind dialect() const noexcept { return dialect_; }

 private:
  friend struct detail::row_lock_tx_access;
  row_lock_tx(detail::connection& conn, std::string name, dialect_kind dialect, bool errors_abort_transaction)
      : conn_(&conn), name_(std::move(name)), dialect_(dialect), errors_abort_(errors_abort_transaction) {}

  detail::connection* conn_;
  std::string name_;
  dialect_kind dialect_;
  bool errors_abort_;          // any failed statement aborts the transaction (PostgreSQL)
  std::string failure_;        // why the transaction can no longer commit; empty while it can
  std::string failure_state_;  // that error's SQLSTATE and vendor code
  long long failure_code_ = 0;
};

// True when `db`'s dialect has row locks (PostgreSQL, MySQL/MariaDB); false for SQLite, where every
// function below throws not_supported. (True on a Galera cluster too, where the functions below
// throw not_supported unless the URI has ?galera=pinned: telling would need a round trip.)
SQLLOCK_API bool supports_row_locks(const database& db) noexcept;

// For the adapters' lock_row (sqllock/adapters/mysql.hpp, soci.hpp), which have no URI to carry
// ?galera=pinned: true declares, for the whole process, that every client of these row locks
// connects to the same Galera node, so lock_row no longer refuses a multi-node Galera cluster (nor
// asks whether the server is one); false (the default) refuses it there. Thread-safe.
SQLLOCK_API void set_caller_row_locks_galera_pinned(bool pinned) noexcept;

namespace detail {

template <class F>
using row_lock_result_t = std::invoke_result_t<F&, row_lock_tx&>;

// Runs `body` under the lock and keeps its result (see scoped_result.hpp).
template <class F>
auto row_lock_attempt(const database& db, std::string_view name, row_wait_kind wait,
                      std::chrono::steady_clock::time_point deadline, F& body, std::stop_token stop = {}) {
  return scoped_result<row_lock_result_t<F>>::keep(
      [&](const auto& run) { return run_row_locked(db, name, wait, deadline, stop, run); }, body);
}

}  // namespace detail

// Waits for the lock on `name`, opens a transaction on one of db's connections, runs body(tx) in it
// and commits; the lock ends with the commit. If body throws, rolls back (undoing body's writes,
// releasing the lock) and rethrows. Returns what body returns.
// Throws invalid_argument for a bad name or a name the calling thread already holds; not_supported
// on SQLite and on a multi-node Galera cluster (see the top of this file); schema_error when
// migration 2 has not run; connection_error when the connection breaks before or while body runs
// (nothing was committed); outcome_unknown when it breaks during COMMIT; deadlock or
// serialization_failure (transaction_rollback, see error.hpp) when the server chose this
// transaction as a victim, while locking or in one of body's statements (nothing was committed —
// retry the whole call); backend_error when the server refuses otherwise. Thread-safe: each call
// uses its own connection.
template <class F>
detail::row_lock_result_t<F> with_row_lock(const database& db, std::string_view name, F&& body) {
  return detail::scoped_result<detail::row_lock_result_t<F>>::value(
      detail::row_lock_attempt(db, name, detail::row_wait_kind::block, {}, body));
}

// Like with_row_lock, but a stop requested on `stop` ends the wait: the waiting FOR UPDATE is
// cancelled on the server from another connection of `db` (pg_cancel_backend, KILL QUERY: allowed
// for the user's own sessions), its transaction rolled back, and the call returns false (body
// returns void) or std::nullopt (body returns a value) without running body, as try_with_row_lock
// does. A stop requested before the call leaves one attempt; one requested while body runs changes
// nothing (body may watch the token itself).
template <class F>
[[nodiscard]] auto with_row_lock(const database& db, std::string_view name, std::stop_token stop, F&& body) {
  return detail::row_lock_attempt(db, name, detail::row_wait_kind::block, {}, body, std::move(stop));
}

// Like with_row_lock, but does not wait (NOWAIT): if another transaction holds the lock, returns
// false (body returns void) or std::nullopt (body returns a value) without running body.
template <class F>
[[nodiscard]] auto try_with_row_lock(const database& db, std::string_view name, F&& body) {
  return detail::row_lock_attempt(db, name, detail::row_wait_kind::nowait, {}, body);
}

// Like try_with_row_lock, but waits up to `timeout`, any std::chrono duration (saturated, see
// deadline.hpp). On MySQL/MariaDB the wait is rounded up to whole seconds (at least 1). A timeout
// of zero or less does not wait at all; one longer than the server's longest lock timeout
// (PostgreSQL: about 24.8 days; MariaDB: about 3.2 years) waits that long.
// The connection's own lock wait setting is back in force before body runs.
template <class Rep, class Period, class F>
[[nodiscard]] auto try_with_row_lock_for(const database& db, std::string_view name,
                                         const std::chrono::duration<Rep, Period>& timeout, F&& body) {
  const auto deadline = detail::steady_deadline_after(timeout);
  return detail::row_lock_attempt(db, name, detail::row_wait_kind::until, deadline, body);
}
// The same, ending the wait also on a stop requested on `stop` (see with_row_lock(db, name, stop, body)).
template <class Rep, class Period, class F>
[[nodiscard]] auto try_with_row_lock_for(const database& db, std::string_view name,
                                         const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop,
                                         F&& body) {
  const auto deadline = detail::steady_deadline_after(timeout);
  return detail::row_lock_attempt(db, name, detail::row_wait_kind::until, deadline, body, std::move(stop));
}

// Like try_with_row_lock_for, but waits until `deadline`, a time point of any clock (turned into a
// wait from now, saturated: see deadline.hpp); a deadline already past does not wait.
template <class Clock, class Duration, class F>
[[nodiscard]] auto try_with_row_lock_until(const database& db, std::string_view name,
                                           const std::chrono::time_point<Clock, Duration>& deadline, F&& body) {
  return detail::row_lock_attempt(db, name, detail::row_wait_kind::until, detail::steady_deadline_at(deadline), body);
}
// The same, ending the wait also on a stop requested on `stop`.
template <class Clock, class Duration, class F>
[[nodiscard]] auto try_with_row_lock_until(const database& db, std::string_view name,
                                           const std::chrono::time_point<Clock, Duration>& deadline,
                                           std::stop_token stop, F&& body) {
  return detail::row_lock_attempt(db, name, detail::row_wait_kind::until, detail::steady_deadline_at(deadline), body,
                                  std::move(stop));
}

}  // namespace sqllock
