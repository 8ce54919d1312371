// What the libpqxx driver's two connection classes share: the pooled connection (pqxx_connection)
// and the adapter over an application's own transaction (pqxx_tx_connection). Converting results
// and parameters, and translating pqxx exceptions into sqllock's.
// Only the pqxx driver's files include this header.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <pqxx/connection_base>
#include <pqxx/result>

#include "driver/connection.hpp"

namespace sqllock::detail {

// A pqxx exception's message without libpq's trailing newline, for sqllock's own messages.
std::string pqxx_message(const char* what);

// The rows of `r` as text. `query`: whether the statement only reads (see statement_kind.hpp);
// its row count is then not reported as affected rows.
result pqxx_to_result(const pqxx::result& r, bool query);

// Parameter texts for libpq: nullptr is SQL NULL. Integers are formatted into `storage`, which
// must outlive the returned pointers. Throws invalid_argument for a text with a NUL byte (libpq
// takes C strings and would silently cut it short).
std::vector<const char*> pqxx_parameter_texts(std::span<const value> params, std::vector<std::string>& storage);

// Call only inside a catch block that caught a pqxx::pqxx_exception: throws the sqllock exception
// for it. A lost connection (pqxx::broken_connection, or `conn` no longer open after any error)
// sets `broken` and throws connection_error naming `display`; everything else is a backend_error
// with the SQLSTATE (restored for the class-40 errors libpqxx 6 turns into their own classes).
[[noreturn]] void rethrow_pqxx_error(const pqxx::connection_base& conn, const std::string& display, bool& broken);

}  // namespace sqllock::detail
