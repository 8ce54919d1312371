// sqllock/session_lock_options.hpp — options of the locks that live in a database session:
// advisory_lock (PostgreSQL pg_advisory_*) and named_lock (MySQL/MariaDB GET_LOCK).
//
// Such a lock is held by one database session. sqllock pins one pooled connection per owner (the
// calling thread, or an explicit owner key) while that owner holds any of these locks on a
// handle, and gives it back to the pool once the owner holds none. The server frees the locks the
// moment the session ends — the process died, the connection broke, an operator killed it — so a
// crashed holder never blocks anyone. The holder itself learns of a dead session from a keepalive
// ping every `keepalive` period (or from its next statement): the lock is then *lost*.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <string>

namespace sqllock {

struct session_lock_options {
  // Explicit owner key. Empty: each calling thread is its own owner with its own session, so
  // threads exclude each other like with a std::mutex. Set: every thread using this key on the
  // same handle shares one session and so one set of holds (re-entrant), and may unlock what
  // another thread locked; their lock operations then take turns on that session. At most 128
  // bytes.
  std::string owner;

  // How often a session that holds locks is pinged to notice that it died. A dead session is
  // reported within about keepalive + one round trip. Between 10 ms and 1 hour.
  std::chrono::milliseconds keepalive = std::chrono::seconds(5);

  // Called once when the session holding this object's locks dies, on the thread that noticed
  // (sqllock's keepalive thread, or a thread whose statement failed). Must not block for long
  // and must not throw (exceptions are swallowed).
  std::function<void()> on_lost;

  // Called when unlock() (which must not throw) fails; receives the error. Default: one line on
  // stderr. Use release() to get the exception instead.
  std::function<void(const std::exception&)> on_unlock_error;
};

}  // namespace sqllock
