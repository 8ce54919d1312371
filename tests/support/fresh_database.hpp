// Test helpers that need the library's internals: raw SQL on a handle's connection, and a new
// empty database on a test server for tests that must start from nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/handle/database_impl.hpp"
#include "sqllock/database.hpp"
#include "support/test_env.hpp"

namespace sqllock::test {

// Runs one statement ($1… placeholders) on a pooled connection of `db` and returns its rows.
detail::result sql(const database& db, std::string_view statement, std::vector<detail::value> params = {});

// A name no other test run uses: prefix + pid + counter + random, [a-z0-9_] only.
std::string unique_name(std::string_view prefix);

// For a server target: creates an empty database next to the one in `uri` and returns a URI
// for it (same scheme, credentials and server). For SQLite: a new file. Server databases are
// left behind for the private test servers to discard.
std::string fresh_database_uri(const std::string& uri, dialect_kind dialect);

// The same for a target: the owner creates the database, and the result's uri and owner_uri
// connect to it as t's runtime role and owner (the test servers grant the runtime role rights in
// new databases too).
target fresh_database(const target& t);

}  // namespace sqllock::test
