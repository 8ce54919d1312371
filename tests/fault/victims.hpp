// Finding the database sessions the nemesis may kill, and the worker process behind each.
//
// Sessions are found per lock kind: those holding an advisory lock (pg_locks), a GET_LOCK lock
// (IS_USED_LOCK of each resource's server-side name), a row lock (a transaction idle inside its
// critical section / InnoDB transactions with locked rows), or — table locks hold no session —
// any client session; support/client_sessions.hpp ties each to the process with its TCP port.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "fault/config.hpp"
#include "sqllock/database.hpp"
#include "support/client_sessions.hpp"

namespace sqllock::fault {

struct victim {
  std::int64_t session = 0;  // PostgreSQL backend pid / MariaDB connection id
  pid_t pid = 0;             // the worker process with that connection
};

// Sessions of `kind` among `workers`' connections to `admin`'s server.
std::vector<victim> find_victims(const database& admin, lock_kind kind, int resources,
                                 const std::vector<pid_t>& workers);

// Ends one of `victims`' sessions that is inside a transaction (PostgreSQL: state active or idle
// in transaction), found and ended in one statement — behind a pooler, a server session a client's
// transaction runs on, which a look and a later kill would miss (a lock's transactions last less
// than a millisecond); nullopt when none was.
std::optional<victim> kill_one_in_transaction(const database& admin, const std::vector<victim>& victims);

// Ends a victim's session (pg_terminate_backend / KILL): see support/client_sessions.hpp.
using test::kill_session;

}  // namespace sqllock::fault
