// A gtest fixture for lock suites: one migrated lock table per test on the parameter's target.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sqllock/database.hpp"
#include "sqllock/migrate.hpp"
#include "support/fresh_database.hpp"
#include "support/test_env.hpp"

namespace sqllock::test {

class LockTableTest : public ::testing::TestWithParam<target> {
 protected:
  void SetUp() override {
    if (GetParam().uri.empty()) {
      if (servers_required()) FAIL() << "test server for " << GetParam().name << " not configured";
      GTEST_SKIP() << "test server not configured";
    }
    table_ = unique_name("lk");
    auto db = open_owner();
    migrate(db);
  }

  // A new handle on the test's lock table, as the runtime role (see test_env.hpp). Each handle
  // is a separate owner.
  database open() const {
    database_options o;
    o.table = table_;
    return database(GetParam().uri, o);
  }

  // The same as the schema owner, for what the runtime role may not do (DDL, migrations).
  database open_owner() const {
    database_options o;
    o.table = table_;
    return database(GetParam().owner_uri, o);
  }

  // COUNT(*) of the lock table, optionally filtered by a WHERE clause.
  std::int64_t rows(const database& db, const std::string& where = "") const {
    return std::stoll(
        sql(db, "SELECT COUNT(*) FROM " + table_ + (where.empty() ? "" : " WHERE " + where)).rows.at(0).at(0).value());
  }

  // One column of the row for `resource`, as text; nullopt when there is no row.
  std::optional<std::string> column(const database& db, const std::string& resource, const std::string& col) const {
    auto r = sql(db, "SELECT " + col + " FROM " + table_ + " WHERE resource = $1", {resource});
    if (r.rows.empty()) return std::nullopt;
    return r.rows[0].at(0);
  }

  std::string table_;
};

}  // namespace sqllock::test
