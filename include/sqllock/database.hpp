// sqllock/database.hpp — a handle to the database that stores the locks. Start here.
//
// A database is opened from a URI that picks both the SQL dialect and the client library:
//
//   postgresql://user:pass@host:5432/db     PostgreSQL through libpqxx
//   mysql://user:pass@host:3306/db          MySQL 8 / MariaDB through MySQL Connector/C++
//   mariadb://…                             the same as mysql://
//   sqlite:///abs/path/locks.db             SQLite through SOCI (the embedded default)
//   sqlite:relative/path/locks.db           SQLite, path relative to the working directory
//   soci+postgresql://…, soci+mysql://…     PostgreSQL / MySQL through SOCI
//
// PostgreSQL URIs go to libpq as written, so every libpq parameter works, and so does the
// multi-host form for failover: postgresql://h1:5432,h2:5432/db?target_session_attrs=read-write.
// sqllock's own query parameters (removed before the URI reaches the client library):
//   ?prepare=off    (PostgreSQL) run every statement unnamed and poll instead of LISTEN: the
//                   setting for PgBouncer in transaction mode. Default on: each statement is
//                   prepared once per connection under a name derived from its text.
//   ?galera=pinned  (MySQL/MariaDB) allow named_lock and row locks on a multi-node Galera
//                   cluster, where they are refused by default: only when every client of these
//                   locks connects to the same node.
//   ?statement_timeout=10s  how long one statement may go unanswered before sqllock cuts it off
//                   (database_options::statement_timeout, which it overrides): 500ms, 10s, 2m;
//                   1ms to 24h. The way to set it for the sqllock programs.
// See "Running on HA setups and poolers" in docs/operations.md.
//
// A handle is cheap to copy (copies share one connection pool) and safe to use from many
// threads at once. It owns a small pool of connections: statement-sized operations borrow one
// for a single statement, session-scoped locks pin one for as long as they are held.
#pragma once

#include "sqllock/dialect_kind.hpp"
#include "sqllock/export.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace sqllock {

namespace detail {
class database_impl;
struct database_access;
}  // namespace detail

// How a database handle behaves. Defaults suit most applications.
struct database_options {
  // Name of the lock table. Letters, digits and '_', starting with a letter or '_', at most 48
  // characters (derived names such as "<table>_fence" must fit every dialect's identifier
  // limit). Always quoted in SQL, so reserved words are allowed and case is preserved.
  std::string table = "distributed_lock";

  // Most idle connections kept for reuse. More may be open while many threads work at once.
  // An idle connection the server has closed (a restart, an ended session) is dropped before it
  // would be lent out, so the next operation connects anew instead of failing — with mysql://
  // only when sqllock could identify the connection's socket (Connector/C++ does not expose it;
  // see docs/design.md): otherwise each such connection costs one connection_error, and the
  // operation may be retried at once.
  std::size_t pool_size = 4;

  // How long one connection attempt may take before connection_error is thrown.
  std::chrono::milliseconds connect_timeout{5000};

  // How long one statement may go unanswered. Past it, sqllock shuts the connection's socket down,
  // so the call ends even on a network that silently drops packets (TCP alone would take ~15
  // minutes to give up): it throws connection_error — outcome_unknown when the statement may have
  // changed something (an acquire, a release) — saying the bound was exceeded, and the connection is
  // discarded. A statement that asks the server to wait (a lock wait) gets that wait on top; a
  // timed acquire (try_lock_for, try_lock_until) bounds its statements by its own deadline plus
  // 1 s, whichever is sooner. Statements of the application's own (row_lock transactions) and
  // migrations are not bounded. SQLite has no network and no bound. The default, 10 s, is far
  // above a healthy statement's time (milliseconds) and a loaded server's stalls, and within a
  // third of the default 30 s lease. Overridden by the URI's ?statement_timeout=. Positive, at
  // most 24 h; invalid_argument otherwise.
  std::chrono::milliseconds statement_timeout{10000};
};

class SQLLOCK_API database {
 public:
  // Opens a handle and connects once to check that the database is reachable.
  // Throws invalid_argument for a malformed URI or bad options, not_supported when the URI's
  // driver was not built into this sqllock, connection_error when the server cannot be reached.
  explicit database(std::string_view uri, database_options options = {});

  // The dialect the URI selected.
  dialect_kind dialect() const noexcept;

  // The client library in use: "pqxx", "mysqlcppconn" or "soci".
  std::string_view driver_name() const noexcept;

  // The (unquoted) lock table name from the options.
  const std::string& table() const noexcept;

  // The URI with any password replaced by "***", for logs and error messages.
  const std::string& display_uri() const noexcept;

 private:
  friend struct detail::database_access;
  explicit database(std::shared_ptr<detail::database_impl> impl) noexcept;
  std::shared_ptr<detail::database_impl> impl_;
};

}  // namespace sqllock
