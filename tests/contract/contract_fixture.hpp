// The fixture of the lock contract suites: one lock kind on one target (support/lock_kinds.hpp),
// a migrated lock table per test, and handles on it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "sqllock/database.hpp"
#include "sqllock/migrate.hpp"
#include "support/fresh_database.hpp"
#include "support/lock_kinds.hpp"
#include "support/test_env.hpp"

namespace sqllock::test {

class LockContractTest : public ::testing::TestWithParam<lock_case> {
 protected:
  void SetUp() override {
    if (where().uri.empty()) {
      if (servers_required()) FAIL() << "test server for " << where().name << " not configured";
      GTEST_SKIP() << "test server not configured";
    }
    table_ = unique_name("lk");
    database_options o;
    o.table = table_;
    database owner(where().owner_uri, o);
    migrate(owner);
  }

  const lock_kind& kind() const { return GetParam().kind; }
  const target& where() const { return GetParam().where; }

  // A new handle on the test's lock table, as the runtime role; each is a separate owner.
  database open(database_options o = {}) const {
    o.table = table_;
    return database(where().uri, o);
  }
  // The same as the schema owner (DDL).
  database open_owner() const {
    database_options o;
    o.table = table_;
    return database(where().owner_uri, o);
  }

  // A lock name no other test (of any process sharing the server) uses: session locks are
  // server-wide.
  static std::string fresh(const std::string& prefix) { return unique_name(prefix); }

  // A new lock object of the kind (object kinds only).
  std::unique_ptr<lock_object> make(const database& db, const std::string& name, const lock_settings& s = {}) const {
    return kind().make(db, name, s);
  }

  // Lock rows in the test's lock table.
  std::int64_t lock_rows(const database& db) const {
    return std::stoll(sql(db, "SELECT COUNT(*) FROM " + table_).rows.at(0).at(0).value());
  }

  std::string table_;
};

// Collects on_unlock_error reports.
struct error_sink {
  std::mutex mu;
  std::vector<std::string> messages;
  std::function<void(const std::exception&)> callback() {
    return [this](const std::exception& e) {
      std::lock_guard lock(mu);
      messages.emplace_back(e.what());
    };
  }
};

// Every target a suite runs on: the driver × dialect pairs and the two PgBouncer pairs.
inline std::vector<target> every_target() {
  auto out = all_targets();
  for (auto& t : pgbouncer_targets()) out.push_back(t);
  return out;
}

// The kind × target cases over `targets` whose kind has the capability `flag`.
inline std::vector<lock_case> with(bool lock_capabilities::*flag, const std::vector<target>& targets) {
  return lock_cases(targets, [flag](const lock_kind& k) { return k.can.*flag; });
}

// The instantiation of a contract suite over `cases` (prefix: the target family).
#define SQLLOCK_CONTRACT_CASES(prefix, suite, cases)                  \
  INSTANTIATE_TEST_SUITE_P(prefix, suite, ::testing::ValuesIn(cases), \
                           [](const auto& info) { return lock_case_name(info.param); })

}  // namespace sqllock::test
