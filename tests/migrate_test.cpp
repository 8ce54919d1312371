// Migrations on every driver × dialect pair: fresh apply, re-apply, racing processes, refusals.
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "common/sha256.hpp"
#include "sqllock/error.hpp"
#include "sqllock/migrate.hpp"
#include "sqllock/table_lock.hpp"
#include "support/fresh_database.hpp"
#include "support/test_env.hpp"

namespace sqllock::test {
namespace {

class MigrateTest : public ::testing::TestWithParam<target> {
 protected:
  void SetUp() override {
    if (GetParam().uri.empty()) {
      if (servers_required()) FAIL() << "test server for " << GetParam().name << " not configured";
      GTEST_SKIP() << "test server not configured";
    }
  }
  database open(const std::string& table) {
    database_options o;
    o.table = table;
    return database(GetParam().uri, o);
  }
  static std::int64_t count(const database& db, const std::string& statement) {
    return std::stoll(sql(db, statement).rows.at(0).at(0).value());
  }
};

TEST_P(MigrateTest, FreshApplyCreatesTableAndRecordsEveryVersion) {
  const auto table = unique_name("lk");
  auto db = open(table);
  EXPECT_EQ(schema_version(db), 0);
  const auto result = migrate(db);
  const auto known = known_migrations(db.dialect());
  ASSERT_FALSE(known.empty());
  ASSERT_EQ(result.applied.size(), known.size());
  EXPECT_EQ(result.version, known.back().version);
  EXPECT_EQ(schema_version(db), known.back().version);
  // The table exists and is empty.
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM " + table), 0);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM sqllock_schema_migrations WHERE lock_table = '" + table + "'"),
            static_cast<std::int64_t>(known.size()));
}

TEST_P(MigrateTest, ReapplyIsANoOp) {
  const auto table = unique_name("lk");
  auto db = open(table);
  migrate(db);
  const auto again = migrate(db);
  EXPECT_TRUE(again.applied.empty());
  EXPECT_EQ(again.version, known_migrations(db.dialect()).back().version);
}

TEST_P(MigrateTest, ReservedWordTableNameIsQuoted) {
  // "select" would be a syntax error unquoted on every dialect; table names are per-test here.
  auto db = open("select");
  EXPECT_NO_THROW(migrate(db));
  EXPECT_NO_THROW(migrate(db));
}

TEST_P(MigrateTest, EditedMigrationIsRefused) {
  const auto table = unique_name("lk");
  auto db = open(table);
  migrate(db);
  sql(db,
      "UPDATE sqllock_schema_migrations SET checksum = 'tampered' WHERE lock_table = '" + table + "' AND version = 1");
  try {
    migrate(db);
    FAIL() << "migrate accepted an edited migration";
  } catch (const schema_error& e) {
    EXPECT_NE(std::string(e.what()).find("edited"), std::string::npos) << e.what();
  }
}

TEST_P(MigrateTest, NewerSchemaIsRefused) {
  const auto table = unique_name("lk");
  auto db = open(table);
  migrate(db);
  sql(db, "INSERT INTO sqllock_schema_migrations (lock_table, version, name, checksum) VALUES ('" + table +
              "', 9999, 'from_the_future', 'x')");
  try {
    migrate(db);
    FAIL() << "migrate accepted a newer schema";
  } catch (const schema_error& e) {
    EXPECT_NE(std::string(e.what()).find("upgrade sqllock"), std::string::npos) << e.what();
  }
}

TEST_P(MigrateTest, EightProcessesRacingOnAFreshDatabaseApplyEachMigrationOnce) {
  // Half of the processes migrate the default lock table, half a second one, so the race covers
  // the history table both share as well as each lock table's own migrations.
  const std::string uri = fresh_database_uri(GetParam().uri, GetParam().dialect);
  const std::string tables[] = {"distributed_lock", "second_lock"};
  constexpr int kProcesses = 8;
  constexpr int kApplied = 10;                  // exit status 10 + the number of migrations this process applied
  std::vector<std::pair<pid_t, int>> children;  // pid, table index
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[1]);
      char c;
      (void)!::read(go[0], &c, 1);  // start together
      try {
        database_options o;
        o.table = tables[i % 2];
        database db(uri, o);
        ::_exit(kApplied + static_cast<int>(migrate(db).applied.size()));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
        ::_exit(1);
      }
    }
    children.emplace_back(pid, i % 2);
  }
  ::close(go[0]);
  ::close(go[1]);  // EOF releases every child at once
  database db(uri);
  const auto known = static_cast<int>(known_migrations(db.dialect()).size());
  int applied[2] = {0, 0};
  for (const auto& [pid, table] : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) >= kApplied) << "a migrating process failed";
    applied[table] += WEXITSTATUS(status) - kApplied;
  }
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(applied[t], known) << tables[t] << ": each migration applied by exactly one process";
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM sqllock_schema_migrations WHERE lock_table = '" + tables[t] + "'"),
              known);
  }
  EXPECT_TRUE(migrate(db).applied.empty());
}

// Schema 6 only adds the SQL guard (<table>_guard) on PostgreSQL and MySQL/MariaDB: a table still
// at schema 5 keeps its locks working, and migrate() then applies 6 alone, which installs it.
TEST_P(MigrateTest, ATableAtSchema5KeepsItsLocksAndMigratesToTheSqlGuard) {
  if (GetParam().dialect == dialect_kind::sqlite) GTEST_SKIP() << "SQLite has no schema 6 (no server functions)";
  const auto table = unique_name("lk");
  auto db = open(table);
  migrate(db);
  // Back to schema 5, as a database migrated by the previous release is.
  sql(db, "DROP FUNCTION " + table + "_guard");
  sql(db, "DELETE FROM sqllock_schema_migrations WHERE lock_table = $1 AND version = $2", {table, std::int64_t{6}});
  ASSERT_EQ(schema_version(db), 5);
  {
    table_lock lock(db, "job");
    ASSERT_TRUE(lock.try_lock()) << "every lock kind works at schema 5";
    lock.unlock();
  }
  const auto r = migrate(db);
  EXPECT_EQ(r.applied, std::vector<int>{6});
  EXPECT_EQ(schema_version(db), 6);
  try {
    sql(db, "SELECT " + table + "_guard($1, $2)", {std::string("job"), std::int64_t{1}});
    ADD_FAILURE() << "the guard passed for a lock nobody holds";
  } catch (const backend_error& e) {
    EXPECT_EQ(e.sqlstate(), "45L01") << e.what();
    EXPECT_NE(std::string(e.what()).find("sqllock: lock no longer held, roll the transaction back"), std::string::npos)
        << e.what();
  }
}

TEST_P(MigrateTest, EmbeddedMigrationsMatchTheFilesInTheSourceTree) {
  const std::string dir = GetParam().dialect == dialect_kind::sqlite  ? "sqlite3"
                          : GetParam().dialect == dialect_kind::mysql ? "mysql"
                                                                      : "postgresql";
  for (const auto& m : known_migrations(GetParam().dialect)) {
    char file[16];
    std::snprintf(file, sizeof file, "%04d_", m.version);
    const std::string path = std::string(SQLLOCK_SOURCE_DIR) + "/migrations/" + dir + "/" + file + m.name + ".sql";
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << path;
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(detail::sha256_hex(text.str()), m.checksum) << path;
  }
}

// Migrations run as the owner; tests/privilege_test.cpp covers the runtime role.
INSTANTIATE_TEST_SUITE_P(AllTargets, MigrateTest, ::testing::ValuesIn(as_owner(all_targets())),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
