// Opens a connection for sqllock's own statements.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/uri.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

// database_options::statement_timeout's default.
inline constexpr std::chrono::milliseconds kDefaultStatementTimeout{10000};

// Connects with the driver spec.driver names (driver/open.hpp), then runs the dialect's session
// set-up (dialect/dialect.hpp) on the new session. Every statement on the connection, the set-up's
// too, is bounded by `statement_timeout` (driver/bounded_connection.hpp). A caller's deadline in
// force on this thread (driver/statement_bound.hpp) shortens the connect timeout too, to no less
// than a second. Throws not_supported when that driver was not built in, connection_error when the
// server cannot be reached within `timeout`, backend_error when the server refuses the set-up.
std::unique_ptr<connection> open_connection(const connection_spec& spec, std::chrono::milliseconds timeout,
                                            std::chrono::milliseconds statement_timeout = kDefaultStatementTimeout);

// Prepares on `conn` what the lease watchdog (the renewal of `table`'s lock rows) and, on
// PostgreSQL, the session keepalive (session_is_mine) send periodically, so that their first run on
// this connection costs one round trip, not two — over a slow link the second could make a lease
// lapse or a live session look dead. A server that refuses (no table yet: migrate() has not run;
// no privilege) changes nothing: the statement is prepared on first use then. Throws
// connection_error when the connection breaks.
void prepare_periodic_statements(connection& conn, dialect_kind kind, const std::string& table);

}  // namespace sqllock::detail
