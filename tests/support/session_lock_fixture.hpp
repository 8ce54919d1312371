// Fixtures for the session-lock suites (advisory_lock on PostgreSQL, named_lock on MySQL): the
// targets of one dialect, a handle per call, and helpers to find and kill a lock's session.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "sqllock/database.hpp"
#include "support/fresh_database.hpp"
#include "support/test_env.hpp"

namespace sqllock::test {

// The targets of all_targets() whose dialect is (or, with `except`, is not) `dialect`.
inline std::vector<target> targets_of(dialect_kind dialect, bool except = false) {
  std::vector<target> out;
  for (auto& t : all_targets())
    if ((t.dialect == dialect) != except) out.push_back(t);
  return out;
}

// `uri` with one more query parameter, e.g. "application_name=x".
inline std::string with_query(const std::string& uri, const std::string& param) {
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + param;
}

class SessionLockTest : public ::testing::TestWithParam<target> {
 protected:
  void SetUp() override {
    if (GetParam().uri.empty()) {
      if (servers_required()) FAIL() << "test server for " << GetParam().name << " not configured";
      GTEST_SKIP() << "test server not configured";
    }
  }

  // A new handle, as the runtime role (see test_env.hpp). Each handle is a separate set of owners
  // and sessions.
  database open(database_options o = {}) const { return database(GetParam().uri, o); }
  // A new handle as the schema owner, for what the runtime role may not do (DDL).
  database open_owner(database_options o = {}) const { return database(GetParam().owner_uri, o); }

  // The first field of the first row of `statement`, or "" when there is none / it is NULL.
  static std::string scalar(const database& db, const std::string& statement, std::vector<detail::value> params = {}) {
    auto r = sql(db, statement, std::move(params));
    if (r.rows.empty() || r.rows[0].empty() || !r.rows[0][0]) return "";
    return *r.rows[0][0];
  }
};

// Polls `done` every millisecond until it is true or `limit` passes; returns the time it took,
// or limit + 1 s when it never became true.
template <class F>
std::chrono::milliseconds time_until(F done, std::chrono::milliseconds limit) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < limit) {
    if (done()) return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return limit + std::chrono::seconds(1);
}

}  // namespace sqllock::test
