// sqllock/named_lock.hpp — MySQL/MariaDB user-level locks (GET_LOCK / RELEASE_LOCK): fast locks
// that write nothing to any table. MySQL 8 and MariaDB only; on PostgreSQL use advisory_lock, on
// SQLite table_lock.
//
//   sqllock::database db("mysql://app:secret@db/app");
//   sqllock::named_lock job(db, "nightly-report");
//   if (std::unique_lock guard(job, std::try_to_lock); guard) run_report();
//
// A named lock belongs to a database session: one pooled connection is pinned while the owner
// holds any (see session_lock_options.hpp), and the server frees the lock when that session ends
// (process killed, connection lost, KILL by an operator). A dead session — its keepalive ping
// fails, or gets no answer because the network dropped the packets — is reported as a lost lock
// within keepalive + 1 s (see session_lock_options.hpp).
//
// Names. GET_LOCK names are server-wide (not per schema) and limited to 64 characters on MySQL;
// MariaDB documents them as case-insensitive. sqllock therefore never sends a name as it is: the
// server-side name is always
//   "sqllock:" + the first 56 hex digits (lower case) of SHA-256 of the name's UTF-8 bytes
// — 64 ASCII characters, so 'A' and 'a', long names and any Unicode all stay distinct. In SQL:
//   CONCAT('sqllock:', LEFT(SHA2(name, 256), 56))      (with a utf8mb4 connection)
// which is what IS_USED_LOCK() or performance_schema.metadata_locks show. Two applications on one
// server that use the same name share the lock: prefix names (e.g. "app/job") to keep them apart.
// named_lock_server_name() returns the mapped name.
//
// Timeouts: try_lock() is GET_LOCK(name, 0); try_lock_for() passes the time left in seconds with
// microseconds (MariaDB honours them; MySQL 8 may round to whole seconds, and sqllock then keeps
// asking until the deadline); lock() waits in rounds of GET_LOCK(name, 60) (a negative timeout is
// not "infinite" on MariaDB, it is an error).
//
// Re-entry follows the server: a session may take the same name several times and must release it
// as many times. The owner (calling thread by default) has one session per database handle, so two
// named_lock objects with one name in one thread re-enter rather than deadlock. count() is the
// number of levels the calling owner took through *this* object and has not released.
//
// Galera: on a MariaDB Galera cluster (or Percona XtraDB Cluster) GET_LOCK locks only on the node
// that runs it — another node grants the same name at once — so the lock operations throw
// not_supported when the server is a node of a cluster of more than one node. Use table_lock there,
// which is safe on Galera, or add ?galera=pinned to the URI if every client of these locks connects
// to the same node. The handle asks the server once, on its first named or row lock (two SHOW
// statements; a server without Galera answers the first); with ?galera=pinned it never asks.
//
// named_lock is TimedLockable (std::unique_lock, std::scoped_lock, std::lock_guard work). There is
// no shared mode. Thread-safety: one object may be used from many threads; each thread is its own
// owner unless options.owner is set. Contention and timeouts return false; failures throw.
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "sqllock/database.hpp"
#include "sqllock/deadline.hpp"
#include "sqllock/session_lock_options.hpp"

namespace sqllock {

namespace detail {
class session_lock;
}

using named_lock_options = session_lock_options;

// The name GET_LOCK sees for `name` (see the header comment). Throws invalid_argument for an
// empty name, one over 255 bytes, invalid UTF-8 or an embedded NUL.
SQLLOCK_API std::string named_lock_server_name(std::string_view name);

class SQLLOCK_API named_lock {
 public:
  // The lock `name`. Nothing is sent yet. Throws not_supported unless db is MySQL/MariaDB;
  // invalid_argument for a bad name, an owner key over 128 bytes or a keepalive outside 10 ms–1 h.
  named_lock(const database& db, std::string_view name, named_lock_options options = {});

  // Releases whatever this object still holds (errors go to on_unlock_error).
  ~named_lock();
  named_lock(const named_lock&) = delete;
  named_lock& operator=(const named_lock&) = delete;

  // Blocks until acquired. Throws connection_error (the session died; nothing is held), deadlock
  // (a backend_error: the server found a cycle of GET_LOCK waits, MySQL error 3058, and refused
  // this one; nothing was taken), backend_error (GET_LOCK returned NULL — the wait was killed) or
  // not_supported (a multi-node Galera cluster, see above; also from the
  // try_lock forms).
  void lock();
  // Waits until acquired (true) or until a stop is requested on `stop` (false: nothing is held).
  // A stop cancels the waiting GET_LOCK from another connection of the handle (KILL QUERY on the
  // session's own statement: the session and the locks it holds live on), so the wait ends within
  // a round trip or two; one requested before the call leaves one attempt. Throws like lock().
  [[nodiscard]] bool lock(std::stop_token stop);
  // One attempt without waiting: GET_LOCK(name, 0). False when another session holds it.
  [[nodiscard]] bool try_lock();
  // Waits up to `timeout`, any std::chrono duration (saturated, see deadline.hpp). False when it
  // is still held elsewhere by then, or a stop was requested on `stop` (as lock(stop)).
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout, std::stop_token stop = {}) {
    return try_lock_until_steady(detail::steady_deadline_after(timeout), std::move(stop));
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline,
                                    std::stop_token stop = {}) {
    return try_lock_until_steady(detail::steady_deadline_at(deadline), std::move(stop));
  }
  // Releases one level of the calling owner. Never throws: failures go to options.on_unlock_error.
  void unlock() noexcept;
  // Like unlock(), but throws: not_held when the calling owner holds no level through this
  // object, or when its session died (the server already freed the lock; work it guarded may have
  // overlapped another holder's); connection_error / backend_error on failure.
  void release();

  // True while the calling owner holds at least one level through this object and its session is
  // not known to be dead.
  bool holds() const noexcept;
  // Levels the calling owner took through this object and has not released.
  std::int64_t count() const noexcept;
  // Signalled when the session holding the calling owner's levels dies. Throws not_held when the
  // calling owner holds nothing through this object.
  std::stop_token lost_token() const;

  // The name given to the constructor, and the name the server sees.
  const std::string& name() const noexcept;
  const std::string& server_name() const noexcept;

 private:
  bool try_lock_until_steady(std::chrono::steady_clock::time_point deadline, std::stop_token stop);

  std::string name_;
  std::string server_name_;
  std::unique_ptr<detail::session_lock> state_;
};

}  // namespace sqllock
