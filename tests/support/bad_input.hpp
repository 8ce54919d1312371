// The inputs of the bad-input suites (tests/bad_input*.cpp), shared by the API and CLI tests, and
// a snapshot of everything a rejected call must leave unchanged.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::test {

// A lock name every lock kind must refuse with invalid_argument.
struct bad_name {
  std::string label;  // for failure messages
  std::string bytes;
  std::string says;  // a fragment the error message must contain: what is wrong with it
  bool in_argv;      // false when a command line cannot carry it (an embedded NUL)
};

// Empty, one and many bytes over the 255-byte limit, invalid UTF-8 of every kind the validator
// knows (stray continuation, overlong, surrogate, beyond U+10FFFF, truncated, 0xFF), NUL bytes.
std::vector<bad_name> bad_lock_names();

// Names of exactly 255 bytes (ASCII, 3-byte and 4-byte characters): accepted, stored unchanged.
std::vector<std::string> at_limit_names();

// Pairs that look alike but are different byte strings, so must be different locks: case,
// NFC/NFD, trailing space, and SQL LIKE wildcards ('%', '_') against what they would match.
std::vector<std::pair<std::string, std::string>> distinct_name_pairs();

// Names full of SQL metacharacters and injection attempts; each must be an ordinary lock name.
std::vector<std::string> metacharacter_names();

// A lock table name database() must refuse with invalid_argument (before connecting).
struct bad_table {
  std::string label;
  std::string name;
};
std::vector<bad_table> bad_table_names();

// Table names that are SQL reserved words, or at the 48-character limit: valid (always quoted).
std::vector<std::string> unusual_valid_table_names();

// What a rejected call must not change: the lock table's rows (their identity, not lease times
// that renewal moves), the resources of <table>_rows (row locks; not on SQLite) and the
// fencing-token source, so that not even a fence is drawn.
struct lock_state {
  std::vector<std::string> lock_rows;  // "resource|owner|session|count|fence", ordered
  std::vector<std::string> row_lock_rows;
  std::int64_t fence_source = 0;
  friend bool operator==(const lock_state&, const lock_state&) = default;
};
lock_state read_lock_state(const database& db);

// gtest prints a state by its rows, so a difference is readable.
void PrintTo(const lock_state& s, std::ostream* os);

}  // namespace sqllock::test
