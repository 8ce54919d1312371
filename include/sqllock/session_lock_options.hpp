// sqllock/session_lock_options.hpp — options of the locks that live in a database session:
// advisory_lock (PostgreSQL pg_advisory_*) and named_lock (MySQL/MariaDB GET_LOCK).
//
// Such a lock is held by one database session. sqllock pins one pooled connection per owner (the
// calling thread, or an explicit owner key) while that owner holds any of these locks on a
// handle, and gives it back to the pool once the owner holds none. The server frees the locks the
// moment the session ends — the process died, the connection broke, an operator killed it — so a
// crashed holder never blocks anyone. The holder itself learns of a dead session from a keepalive
// ping every `keepalive` period (or from its next statement): the lock is then *lost*. A ping that
// fails (session killed, connection closed) and a ping that gets no answer for 0.8 s (packets
// dropped, server frozen — where TCP alone would take a quarter of an hour to give up) both mean a
// dead session, so either is reported within keepalive + 1 s. The server cannot be told of a
// network loss: it frees the locks when it notices the dead connection itself (its TCP keepalive
// settings), or at once if the connection comes back, since sqllock then closes it.
#pragma once

#include <chrono>

#include "sqllock/lock_options.hpp"

namespace sqllock {

struct session_lock_options {
  // Who owns an acquisition (sqllock/lock_options.hpp). Each owner has its own session: the
  // threads that share a key share one session and one set of holds, and their lock operations
  // take turns on it.
  owner_key owner{};

  // How often a session that holds locks is pinged to notice that it died. A dead session — its
  // ping fails, or stays unanswered for 0.8 s — is reported within keepalive + 1 s; after that,
  // unlock()/release() return at once (not_held) instead of waiting on the dead connection.
  // Between 10 ms and 1 hour.
  std::chrono::milliseconds keepalive = std::chrono::seconds(5);

  // Called when the session holding this object's locks dies (sqllock/lock_options.hpp), on the
  // thread that noticed: one of sqllock's keepalive threads, or a thread whose statement failed.
  lost_callback on_lost{};

  // Where unlock()'s errors go (sqllock/lock_options.hpp).
  unlock_error_callback on_unlock_error{};
};

}  // namespace sqllock
