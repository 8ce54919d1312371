// How the PostgreSQL drivers (pqxx, SOCI's postgresql backend) run sqllock's parameterised
// statements: prepared under a name that is a function of the statement text, or unnamed.
//
// A prepared statement lives in one server session. A transaction-mode pooler such as PgBouncer
// hands each transaction (each autocommit statement) whichever server session is free, so a name
// one client prepared may be found, missing or defined by another client on the session a later
// statement reaches. With per-connection counters as names ("sqllock_1", "sqllock_2", …) two
// clients' different statements shared names and silently ran each other's text
// (docs/operations.md, "Running on HA setups and poolers"). A name derived from the text means
// one name is always one text, on every client and every sqllock version: the worst a pooler can
// do is report the name missing (26000) or already there (42P05), which the drivers turn into
// an error that says to use ?prepare=off. With ?prepare=off (connection_spec::
// prepare_statements) statements run unnamed — Parse, Bind and Execute in one round trip — and
// nothing is left on the server session.
#pragma once

#include <string>
#include <string_view>

#include "common/sha256.hpp"

namespace sqllock::detail {

// "sqllock_" and 128 bits of the SHA-256 of `native_sql` in hex: 40 characters, within
// PostgreSQL's 63-byte identifier limit.
inline std::string pg_statement_name(std::string_view native_sql) {
  return "sqllock_" + sha256_hex(native_sql).substr(0, 32);
}

// 26000 (invalid_sql_statement_name): the named statement is not on the server session the
// statement reached; 42P05 (duplicate_prepared_statement): the name is already prepared there.
// Either means the connection does not keep one server session, or something deallocated it.
constexpr bool is_pg_statement_name_error(std::string_view sqlstate) noexcept {
  return sqlstate == "26000" || sqlstate == "42P05";
}

// 25006 (read_only_sql_transaction): the server session is read-only, e.g. a primary demoted by
// failover that still accepts connections. Such a connection can never take a lock again; the
// drivers report the error and discard it, so the pool's next connection goes through the URI
// again (libpq's target_session_attrs=read-write then finds the new primary).
constexpr bool is_pg_read_only_error(std::string_view sqlstate) noexcept { return sqlstate == "25006"; }

// What to append to a statement-name error's message.
inline std::string pg_statement_name_hint() {
  return " (sqllock prepares each statement once per connection, but the server session this "
         "statement reached did not have it, or had it already: the connection goes through a "
         "transaction-mode pooler such as PgBouncer, which lends each transaction another server "
         "session, or the session ran DISCARD ALL / DEALLOCATE. Add ?prepare=off to the URI to run "
         "every statement unnamed; see \"Running on HA setups and poolers\" in docs/operations.md)";
}

}  // namespace sqllock::detail
