// Refusing node-local locks on a multi-node Galera cluster.
//
// On MariaDB Galera (and Percona XtraDB Cluster) GET_LOCK and SELECT … FOR UPDATE lock only on the
// node that runs them: a second node grants a held GET_LOCK name, and FOR UPDATE on another node
// does not wait (measured on MariaDB 10.11 with Galera 4; tests/galera_test.cpp). So named_lock and
// the row locks (with_row_lock, the adapters' lock_row) do not exclude clients on different nodes.
// table_lock is safe there (certification lets one writer of the lock row win).
//
// Before a named lock or row lock is taken on MySQL/MariaDB, the core asks the server (two SHOW
// statements of the dialect, dialect/galera_sql.hpp) and refuses with not_supported when it is a
// node of a cluster of more than one node with wsrep on — unless the caller declared that every
// client of these locks connects to the same node (?galera=pinned on the URI; for the adapters,
// set_caller_row_locks_galera_pinned), in which case nothing is asked at all. PostgreSQL and SQLite
// are never asked.
//
// Cost: a database handle asks once (the verdict is kept in database_impl, see galera_verdict_cache)
// on its first named or row lock operation, so table_lock users pay nothing; a server without
// Galera answers the first statement with no row or a size of 0, so one round trip in all, two on
// a Galera node. The adapters have no handle; their cache is described at refuse_on_galera below.
//
// A verdict is kept for the handle's life: a cluster that grows from one node to several after the
// handle asked is not noticed by that handle (clients that connect later are refused). The usual
// start of a cluster (one node bootstrapped, the others joining within seconds) happens before any
// application connects; a single-node Galera cluster is treated like a plain server.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "dialect/galera_sql.hpp"
#include "driver/connection.hpp"
#include "sqllock/database.hpp"

namespace sqllock::detail {

class database_impl;

// What the server answered; nullopt when it had no such row (no Galera support at all, MySQL 8).
struct galera_facts {
  std::optional<std::string> cluster_size;  // status wsrep_cluster_size
  std::optional<std::string> wsrep_on;      // variable wsrep_on (asked only when cluster_size > 1)
};

struct galera_verdict {
  // A node of a Galera cluster of more than one node, replicating: node-local locks do not exclude.
  bool multi_node = false;
  std::int64_t cluster_size = 0;
  std::string wsrep_on;  // as the server reported it; empty when it was not asked or not reported
};

// wsrep_cluster_size as a number; 0 when absent or not a number.
std::int64_t galera_cluster_size(const std::optional<std::string>& cluster_size) noexcept;

// The verdict for what a server answered. multi_node when the cluster has more than one node and
// wsrep_on is not OFF (a missing wsrep_on on a server that reports a cluster counts as ON: refusing
// is the safe mistake).
galera_verdict judge_galera(const galera_facts& facts);

// The lock kinds that are node-local on Galera.
enum class node_local_lock { get_lock, for_update };  // named_lock; row locks

// The message of the not_supported error that refuses lock `name` of `kind`. `server` says which
// server, e.g. "the server at mysql://app:***@db1/app"; `opt_in` how to declare that every client
// connects to the same node, e.g. "add ?galera=pinned to the URI".
std::string galera_refusal_message(node_local_lock kind, std::string_view name, std::string_view server,
                                   const galera_verdict& verdict, std::string_view opt_in);

// Asks the server on `conn` (one statement, or two on a Galera node). Throws what the driver throws.
galera_verdict probe_galera(connection& conn, const galera_probe_sql& sql);

// The verdict of one database handle, asked once (see the file comment). Thread-safe; the probe
// runs outside the mutex (a connection may hang, and a forked child must not inherit a held
// mutex), so threads whose first calls race may each ask once; the first answer is kept. A failed
// probe keeps nothing: the next operation asks again.
class galera_verdict_cache {
 public:
  galera_verdict get(connection& conn, const galera_probe_sql& sql);

 private:
  std::mutex mu_;
  std::optional<galera_verdict> verdict_;  // guarded by mu_
};

// Throws not_supported when lock `name` of `kind` must be refused on the server of `impl`: MySQL
// dialect, no ?galera=pinned, and a multi-node Galera cluster. `conn` is one of impl's connections
// (the one the lock is about to use); it is asked on the handle's first call only.
void refuse_on_galera(database_impl& impl, connection& conn, node_local_lock kind, std::string_view name);

// An application's own connection, which the adapters wrap (no database handle, no URI).
struct caller_connection {
  // The application's connection object (sql::Connection*, soci::session*) ...
  const void* object = nullptr;
  // ... and the server's id of its session, when the client library tells it without a round trip
  // (libmariadb's mysql_thread_id for SOCI; 0 for Connector/C++ 1.1, which does not expose it).
  std::uint64_t server_session = 0;
  // For messages, e.g. "the application's SOCI session".
  std::string_view description;
};

// The adapters' form: lock_row in the application's own transaction. Throws not_supported like the
// handle form unless set_caller_galera_pinned(true) was called.
//
// Cache: without a handle there is nowhere per server to keep a verdict, and asking on every
// lock_row would double its round trips. So verdicts are kept process-wide per application
// connection — keyed by the connection object's address and, where known, the server's session id
// (so a new connection that happens to reuse a freed object's address is asked again) — for
// kCallerVerdictTtl: a loop of lock_row calls on one connection costs one extra round trip per
// minute, and a cluster that grows under a live connection is noticed within that minute. At most
// kCallerVerdictMax connections are remembered (expired entries are dropped first, then all).
void refuse_on_galera(connection& conn, dialect_kind dialect, const caller_connection& caller, std::string_view name);

// Whether the application's connection `conn` is on a node of a multi-node Galera cluster where
// node-local locks do not exclude (false with set_caller_galera_pinned(true), and for other
// dialects); asked and cached as for refuse_on_galera. The guard writes the lock row there
// (core/lease/lease_guard.hpp) instead of reading it with a lock.
bool caller_on_multi_node_galera(connection& conn, dialect_kind dialect, const caller_connection& caller);

inline constexpr std::chrono::seconds kCallerVerdictTtl{60};
inline constexpr std::size_t kCallerVerdictMax = 256;

// The adapters' opt-in (sqllock::set_caller_row_locks_galera_pinned), process-wide.
void set_caller_galera_pinned(bool pinned) noexcept;
bool caller_galera_pinned() noexcept;

}  // namespace sqllock::detail
