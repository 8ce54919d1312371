// The driver seam: what sqllock needs from a client library, and nothing about locks.
//
// A driver executes parameterised statements on one connection. Statements use PostgreSQL-style
// placeholders ($1, $2, …; a number may repeat); each driver rewrites them to its own syntax once
// and caches the prepared form (see placeholders.hpp). Values travel as the tagged `value` below
// and come back as text (or NULL): dialects format and parse them.
//
// Drivers translate their exceptions into sqllock's: connection_error when the connection is
// unusable, backend_error (with SQLSTATE and vendor code) for everything the server reported.
// A driver never throws outcome_unknown: only the core knows whether a statement changed state.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sqllock::detail {

// A bound parameter: SQL NULL, an integer, or text.
using value = std::variant<std::monostate, std::int64_t, std::string>;

// A field as text; nullopt is SQL NULL.
using field = std::optional<std::string>;
using row = std::vector<field>;

struct result {
  std::vector<row> rows;
  // Rows the statement inserted, updated or deleted, as the server counts them; 0 for queries.
  std::uint64_t affected = 0;
};

// Server-pushed notifications (PostgreSQL LISTEN/NOTIFY). Only some drivers have them.
class notification_source {
 public:
  virtual ~notification_source() = default;
  // Subscribes this connection to `channel` (LISTEN). Throws like connection::exec.
  virtual void listen(const std::string& channel) = 0;
  // Waits up to `timeout` for notifications on subscribed channels; returns their payloads,
  // empty on timeout. Throws connection_error when the connection breaks.
  virtual std::vector<std::string> await(std::chrono::milliseconds timeout) = 0;
};

class connection {
 public:
  virtual ~connection() = default;

  // Executes one statement with bound parameters and returns its rows (none for statements that
  // return none). The statement is prepared on first use and reused afterwards.
  virtual result exec(std::string_view sql, std::span<const value> params) = 0;

  // Prepares `sql` (taking `param_count` parameters) on the server now, as exec would on first use,
  // so that its first exec costs one round trip instead of two. Nothing happens where statements
  // are not prepared on the server (?prepare=off, SQLite, MySQL through SOCI). Throws like exec.
  virtual void prepare(std::string_view sql, std::size_t param_count) {
    (void)sql;
    (void)param_count;
  }

  // Executes one statement without parameters and without preparing it (DDL, BEGIN, SET …).
  virtual result exec_direct(std::string_view sql) = 0;

  // True once the connection is known to be unusable; the pool then discards it.
  virtual bool broken() const noexcept = 0;

  // The connection's socket descriptor, or -1 when the client library does not expose it (or the
  // connection is broken). Only polled, by closed_by_server(); never read or written.
  virtual int socket() const noexcept { return -1; }

  // True when the server has closed this connection while it sat idle — it restarted, ended the
  // session, or timed it out: the socket reports the peer's hang-up. A non-blocking check without
  // a round trip; false when the driver cannot tell (socket() is -1). The pool drops such a
  // connection instead of lending it, so a restart does not cost the next caller a failed attempt.
  bool closed_by_server() const noexcept;

  // Hands the connection's resources to the operating system without talking to the server.
  // Used in a forked child: closing politely would tear down the parent's session.
  virtual void abandon() noexcept = 0;

  // The client library's name, e.g. "pqxx".
  virtual std::string_view driver_name() const noexcept = 0;

  // This connection's notification support, or nullptr when the driver has none.
  virtual notification_source* notifications() noexcept { return nullptr; }

  // A random tag the core gives this connection's server session when it keeps session-level
  // locks there (dialect/session_lock_sql.hpp explains why); empty until then. Drivers ignore it.
  std::string session_tag;
};

}  // namespace sqllock::detail
