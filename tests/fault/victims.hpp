// Finding the database sessions the nemesis may kill, and the worker process behind each.
//
// Sessions are found per lock kind: those holding an advisory lock (pg_locks), a GET_LOCK lock
// (IS_USED_LOCK of each resource's server-side name), a row lock (a transaction idle inside its
// critical section / InnoDB transactions with locked rows), or — table locks hold no session —
// any client session. A session is tied to its process by the client's TCP port: the socket with
// that local port in /proc/net/tcp, then the process that has it open.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "fault/config.hpp"
#include "sqllock/database.hpp"

namespace sqllock::fault {

struct victim {
  std::int64_t session = 0;  // PostgreSQL backend pid / MariaDB connection id
  pid_t pid = 0;             // the worker process with that connection
};

// Sessions of `kind` among `workers`' connections to the server on `server_port`, via `admin`.
std::vector<victim> find_victims(const database& admin, lock_kind kind, int resources, int server_port,
                                 const std::vector<pid_t>& workers);

// Ends the session (pg_terminate_backend / KILL). Returns whether the server accepted.
bool kill_session(const database& admin, std::int64_t session);

// The process among `candidates` owning the TCP socket 127.0.0.1:client_port → :server_port; 0
// when none does.
pid_t process_of_client_port(int client_port, int server_port, const std::vector<pid_t>& candidates);

}  // namespace sqllock::fault
