// SQL for the database-native session locks: PostgreSQL advisory locks and MySQL/MariaDB
// GET_LOCK. Kept apart from dialect_sql because these statements do not touch the lock table and
// exist only on one dialect each; asking for them on another dialect throws not_supported.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/uri.hpp"
#include "dialect/transaction_sql.hpp"
#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

// Index into the per-key-kind and per-mode arrays below.
enum class advisory_key_kind { single = 0, pair = 1 };  // one bigint, or two integers
enum class lock_mode { exclusive = 0, shared = 1 };

// PostgreSQL pg_advisory_* statements. The key is bound as $1 (bigint) or $1, $2 (integers);
// any further parameter follows it.
//
// Server-session tags. A transaction-mode pooler (PgBouncer) lends each statement whichever
// server session is free, and a session-level advisory lock stays with the server session, not
// the client: another client that reaches that session is granted the lock as a re-entry
// (docs/operations.md, "Running on HA setups and poolers"). So each connection has a random tag,
// the lock statements tag the server session with it ('sqllock.session', a session setting), and
// every lock statement first checks, in the same statement, whether the server session carries
// another connection's tag and holds an advisory lock on the same key: then it returns NULL and
// does nothing. Session-level statements also check on every keepalive ping that the server
// session still carries their own tag. Directly connected, a connection's server session only
// ever carries its own tag, and the checks cost nothing.
struct advisory_sql {
  // [key kind][mode], then the tag; one row, one field: "true" taken, "false" refused, NULL: the key is
  // held on this server session by another connection. try_lock tags the session;
  // try_xact_lock does not.
  std::string try_lock[2][2];       // pg_try_advisory_lock[_shared]
  std::string try_xact_lock[2][2];  // pg_try_advisory_xact_lock[_shared]
  // [key kind][mode], then the tag; each waits (bounded by lock_timeout) and returns one row: ""
  // once taken, NULL as above. lock tags the session and takes, after the tag, its own bound:
  // lock_timeout in session_lock_wait's unit (0: none) for that statement alone.
  std::string lock[2][2];       // pg_advisory_lock[_shared]
  std::string xact_lock[2][2];  // pg_advisory_xact_lock[_shared]
  // [key kind][mode], then the tag; one row: "true" when a level was released, "false" when this
  // session did not hold the lock (the server also logs a warning then), NULL when the server
  // session does not carry the tag (the statement reached another server session).
  std::string unlock[2][2];
  // $1 = the tag → one row: "t" when the server session carries it (the keepalive's check).
  std::string session_is_mine;
  // $1 classid, $2 objid, $3 objsubid (1: bigint key, 2: two integers), $4 pg_locks mode →
  // one row, one field: how many granted advisory locks of this session and database match.
  std::string held;
  // lock_timeout around a waiting statement: for the session (undone by RESET) and for the current
  // transaction only (SET LOCAL).
  lock_wait_sql session_lock_wait;  // the unit and range of lock's bound
  lock_wait_sql xact_lock_wait;
  std::string unlock_all;       // pg_advisory_unlock_all(): drops every session-level lock
  statement_cancel_sql cancel;  // pg_backend_pid(), pg_cancel_backend($1)
  // A bounded wait inside the caller's transaction runs in this savepoint (exec_direct), so a
  // timeout aborts only the savepoint, not the caller's transaction.
  savepoint_sql savepoint;
};

// MySQL / MariaDB user-level lock statements. $1 is always the (already mapped) server name.
struct named_lock_sql {
  std::string get_lock;         // $1 name, $2 timeout in seconds as decimal text → "1", "0" or NULL
  std::string release_lock;     // $1 name → "1" released, "0" held by another session, NULL unknown
  std::string release_all;      // RELEASE_ALL_LOCKS(): drops every lock of this session
  std::string held;             // $1 name → "1" when this session holds it, else "0"
  statement_cancel_sql cancel;  // CONNECTION_ID(), KILL QUERY $1
};

// The statements for `kind`; throws not_supported (naming the lock kind to use instead) when the
// dialect has no such locks.
const advisory_sql& advisory_statements(dialect_kind kind);
const named_lock_sql& named_lock_statements(dialect_kind kind);

// The server's own limit on a session whose client went silent (cut off, or gone without closing
// its socket): set on a session-lock connection when it is pinned, so that the server ends that
// session — and frees its locks — `limit` after the last packet it got from the client, instead
// of after the kernel's keepalive defaults (over two hours). Never before `limit`: the core picks
// a limit past the holder's own verdict (core/session/pinned_session.hpp, server_dead_peer_limit).
//   PostgreSQL: tcp_keepalives_idle = limit - 3 s (at least 1 s), tcp_keepalives_interval = 1 s,
//     tcp_keepalives_count = 3, tcp_user_timeout = limit (in ms) — the TCP keepalive for an idle
//     session, the user timeout for a reply the client never acknowledges. Kept on the pooled
//     connection afterwards (the client's kernel answers the probes while the process lives), so
//     the core sets them again only for a session that needs another limit (reset is ""). Over a
//     Unix socket the server ignores them.
//   MySQL/MariaDB: wait_timeout = limit (seconds a session may stay idle between statements; its
//     TCP keepalive settings are global only). Reset to the global value before the connection
//     goes back to the pool, where it may stay idle longer.
// nullopt on SQLite, and behind a transaction-mode pooler (PostgreSQL with ?prepare=off): there
// the server's socket is the pooler's, not the client's, and a SET would stay with a server
// session other clients share.
struct dead_peer_limit_sql {
  std::string set;                   // exec with `params` bound as $1, $2, …
  std::vector<std::int64_t> params;  // the values for `limit`
  std::string reset;                 // exec_direct before the pool gets the connection back; "": none
};
std::optional<dead_peer_limit_sql> dead_peer_limit_statements(const connection_spec& spec, std::chrono::seconds limit);

// A statement that proves the session is alive: one round trip, no side effects.
const std::string& keepalive_statement(dialect_kind kind);

// Statements (exec_direct, in order) that return a session to a clean state before it goes back
// to the pool: end any transaction, drop every session-level lock, restore settings.
const std::vector<std::string>& session_reset_statements(dialect_kind kind);

}  // namespace sqllock::detail
