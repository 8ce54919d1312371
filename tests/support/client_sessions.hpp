// Finding and ending the database sessions of a client process, for tests that kill a lock
// holder's connection (the CLI tests, the fault harness's nemesis) on PostgreSQL or MySQL/MariaDB.
//
// A server session is tied to its process by the client's TCP port: the socket with that local
// port towards the server's port in /proc/net/tcp, then the process that has it open in
// /proc/PID/fd. So only TCP clients on this host are found (the test servers listen on 127.0.0.1).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::test {

// A client session on the server: PostgreSQL backend pid / MariaDB connection id, and the TCP
// port the client connects from.
struct client_session {
  std::int64_t id = 0;
  int client_port = 0;
};

// Every TCP client session on `admin`'s server except `admin`'s own, in any database. `admin`
// must see other roles' sessions (PostgreSQL: a superuser or pg_read_all_stats; MySQL: PROCESS).
// Throws like the library.
std::vector<client_session> client_sessions(const database& admin);

// The TCP port `admin`'s server listens on (as it reports it).
int server_port(const database& admin);

// The process among `candidates` owning the TCP socket 127.0.0.1:client_port → :server_port; 0
// when none does (or it is gone).
pid_t process_of_client_port(int client_port, int server_port, const std::vector<pid_t>& candidates);

// The ids of the sessions on `admin`'s server whose client is process `pid`.
std::vector<std::int64_t> sessions_of_process(const database& admin, pid_t pid);

// Ends the session (pg_terminate_backend / KILL); the server may take a moment to close it.
// Returns whether the server accepted. `admin` needs the right to end others' sessions.
bool kill_session(const database& admin, std::int64_t session);

}  // namespace sqllock::test
