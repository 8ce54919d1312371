// Least privilege: the role the test suites' lock operations connect as (target::uri, see
// support/test_env.hpp) really is restricted — it cannot create, alter or drop tables, and
// migrating with it fails with a permission_denied that says to migrate as the owner — while
// locks, fencing tokens (the sequence, the MySQL trigger) and status work for it. Every other
// suite then shows that the whole library works with only these rights. SQLite has no roles.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "dialect/queue_sql.hpp"
#include "sqllock/error.hpp"
#include "sqllock/migrate.hpp"
#include "sqllock/status.hpp"
#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/program.hpp"
#include "support/temp_dir.hpp"

namespace sqllock::test {
namespace {

class PrivilegeTest : public LockTableTest {
 protected:
  void SetUp() override {
    LockTableTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!GetParam().least_privilege()) {
      // scripts/test-servers.sh writes a port for each server it starts, and always a runtime URI.
      const bool ours = test_setting(GetParam().dialect == dialect_kind::postgresql ? "SQLLOCK_TEST_PG_PORT"
                                                                                    : "SQLLOCK_TEST_MY_PORT")
                            .has_value();
      if (ours) FAIL() << "test-servers.sh started this server, so a runtime role other than the owner is expected";
      GTEST_SKIP() << "no least-privilege role configured; set SQLLOCK_TEST_{PG,MYSQL}_RUNTIME_URI";
    }
  }

  // Runs `statement` as the runtime role and checks that the server refused it for lack of a
  // privilege (and for nothing else, e.g. a syntax error).
  void expect_refused(const std::string& statement) {
    auto db = open();
    try {
      sql(db, statement);
      ADD_FAILURE() << "the runtime role may run: " << statement;
    } catch (const permission_denied& e) {
      if (GetParam().dialect == dialect_kind::postgresql)
        EXPECT_EQ(e.sqlstate(), "42501") << e.what();
      else
        EXPECT_EQ(e.vendor_code(), 1142) << e.what();  // ER_TABLEACCESS_DENIED_ERROR
      EXPECT_NE(std::string(e.what()).find("Least privilege"), std::string::npos) << "points to the docs: " << e.what();
    }
  }
};

TEST_P(PrivilegeTest, TheRuntimeRoleCannotCreateAlterOrDropTables) {
  expect_refused("CREATE TABLE " + unique_name("intruder") + " (id INTEGER PRIMARY KEY)");
  expect_refused("ALTER TABLE " + table_ + " ADD COLUMN extra INTEGER");
  expect_refused("DROP TABLE " + table_);
  expect_refused("DROP TABLE " + table_ + "_rows");
  auto owner = open_owner();
  EXPECT_EQ(rows(owner), 0) << "the lock table is still there";
}

TEST_P(PrivilegeTest, TheRuntimeRoleLocksDrawsFencesAndReadsStatus) {
  auto db = open();
  table_lock lock(db, "job");
  ASSERT_TRUE(lock.try_lock());
  const auto first = lock.fence();
  EXPECT_GT(first, 0) << "the fence source (PostgreSQL sequence, MySQL trigger) ran for the runtime role";
  const auto listed = list_locks(db);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].resource, "job");
  lock.unlock();
  ASSERT_TRUE(lock.try_lock());
  EXPECT_GT(lock.fence(), first);
  lock.unlock();
  EXPECT_EQ(rows(db), 0);
}

TEST_P(PrivilegeTest, TheRuntimeRoleEnqueuesOnTheWaitQueueAndDrawsTickets) {
  // Schema 5's queue (dialect/queue_sql.hpp): its tickets come from the same fence source.
  auto db = open();
  const auto q = detail::queue_statements(GetParam().dialect, table_);
  const auto enqueue = [&](const std::string& owner) {
    auto c = detail::database_access::impl(db).borrow();
    auto r = c->exec(
        q->enqueue, std::vector<detail::value>{std::string("job"), std::string("F"), owner, std::string("s"),
                                               std::string("h"), std::int64_t{1}, std::string("t"), std::int64_t{60000},
                                               std::int64_t{1}, std::int64_t{1}});
    if (q->enqueue_reads_back)
      r = c->exec(q->enqueue_readback, std::vector<detail::value>{std::string("job"), std::string("F"), owner});
    return std::stoll(r.rows.at(0).at(0).value());
  };
  const auto first = enqueue("a");
  EXPECT_GT(first, 0) << "the ticket source (PostgreSQL sequence, MySQL trigger) ran for the runtime role";
  EXPECT_GT(enqueue("b"), first);
  const std::vector<detail::value> key = {std::string("job"), std::string("F"), first, std::string("a")};
  auto c = detail::database_access::impl(db).borrow();
  if (q->check_read.empty()) {
    (void)c->exec(q->check, key);  // the check deletes (nothing here) …
  } else {
    (void)c->exec(q->check_read, key);
    auto bounded = key;
    bounded.emplace_back(first);
    (void)c->exec(q->check, bounded);
  }
  (void)c->exec(q->renew, std::vector<detail::value>{std::string("s")});  // … and the renewal updates
  EXPECT_EQ(std::stoll(sql(db, "SELECT COUNT(*) FROM " + table_ + "_queue").rows.at(0).at(0).value()), 2);
}

TEST_P(PrivilegeTest, TheRuntimeRoleCallsTheSqlGuard) {
  // Schema 6's <table>_guard runs with the caller's rights: EXECUTE (PostgreSQL: PUBLIC's; MySQL:
  // granted by scripts/test-servers.sh) and the locking read's SELECT and UPDATE.
  auto db = open();
  table_lock lock(db, "job");
  ASSERT_TRUE(lock.try_lock());
  const auto r = sql(db, "SELECT " + table_ + "_guard($1, $2)", {std::string("job"), lock.fence()});
  EXPECT_EQ(r.rows.at(0).at(0).value_or("NULL"), std::to_string(lock.fence()));
  lock.unlock();
}

TEST_P(PrivilegeTest, MigratingAsTheRuntimeRoleFailsAndSaysToMigrateAsTheOwner) {
  database_options o;
  o.table = unique_name("unmigrated");
  database db(GetParam().uri, o);
  try {
    migrate(db);
    FAIL() << "the runtime role migrated";
  } catch (const permission_denied& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("as the owner"), std::string::npos) << what;
    EXPECT_NE(what.find(o.table), std::string::npos) << "names the table: " << what;
  }
  database owner(GetParam().owner_uri, o);
  EXPECT_EQ(schema_version(owner), 0) << "nothing was applied";
  EXPECT_EQ(migrate(owner).applied.size(), known_migrations(GetParam().dialect).size()) << "the owner can";
}

TEST_P(PrivilegeTest, MigratingAnUpToDateTableAsTheRuntimeRoleIsANoOp) {
  // table_ was migrated by the owner in SetUp: an application may call migrate() at every start.
  auto db = open();
  const auto r = migrate(db);
  EXPECT_TRUE(r.applied.empty());
  EXPECT_EQ(r.version, known_migrations(GetParam().dialect).back().version);
}

#ifdef SQLLOCK_CLI
TEST_P(PrivilegeTest, TheMigrateCommandAsTheRuntimeRoleExplainsWhatToDo) {
  const auto dir = make_temp_dir("sqllock-privilege");
  const auto r = run_program({SQLLOCK_CLI, "migrate", "--db", GetParam().uri, "--table", unique_name("cli")}, dir);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.code, 6) << "a database error: " << r.err;
  EXPECT_NE(r.err.find("run `sqllock migrate` (or sqllock::migrate) as the owner"), std::string::npos) << r.err;
}
#endif

INSTANTIATE_TEST_SUITE_P(Servers, PrivilegeTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
