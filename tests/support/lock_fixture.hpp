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

  // Makes every row inserted into `table` (the lock table or one of its companions) sleep
  // `seconds` (text, e.g. "0.2") before its statement returns: a trigger, created as the schema
  // owner, for the late-grant tests. PostgreSQL and MySQL/MariaDB only.
  void pause_inserts_into(const std::string& table, const std::string& seconds) const {
    auto owner = open_owner();
    if (GetParam().dialect == dialect_kind::postgresql) {
      sql(owner, "CREATE FUNCTION " + table +
                     "_pause() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(" + seconds +
                     "); RETURN NEW; END $$");
      sql(owner, "CREATE TRIGGER " + table + "_pause AFTER INSERT ON " + table + " FOR EACH ROW EXECUTE FUNCTION " +
                     table + "_pause()");
    } else {
      sql(owner, "CREATE TRIGGER " + table + "_pause AFTER INSERT ON " + table +
                     " FOR EACH ROW SET @sqllock_pause = SLEEP(" + seconds + ")");
    }
  }

  std::string table_;
};

}  // namespace sqllock::test
