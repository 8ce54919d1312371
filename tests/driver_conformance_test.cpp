// The driver seam's contract (src/driver/connection.hpp), checked against every driver × dialect
// pair: parameter binding, placeholders, affected rows, rows, transactions, prepared-statement
// reuse, error translation, and what happens when the server side of a session goes away.
//
// Each test works in its own table (unique per process and test), so tests may run in parallel.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/uri.hpp"
#include "core/handle/open_session.hpp"
#include "sqllock/error.hpp"
#include "support/fresh_database.hpp"
#include "support/test_env.hpp"

namespace sqllock::test {

namespace {

using namespace std::chrono_literals;
using detail::connection;
using detail::value;

constexpr auto kTimeout = 5s;

std::unique_ptr<connection> open(const std::string& uri) {
  return detail::open_connection(detail::parse_uri(uri), kTimeout);
}

// A TCP port on 127.0.0.1 with nothing listening: bound once by the kernel's choice, then freed.
int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "cannot pick a free port";
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

class DriverConformance : public ::testing::TestWithParam<target> {
 protected:
  void SetUp() override {
    SQLLOCK_REQUIRE_SERVER(GetParam().uri);
    table_ = unique_name("dc");
    conn_ = open(GetParam().uri);
    // MariaDB's built-in default character set is latin1; the tests store UTF-8.
    conn_->exec_direct("CREATE TABLE " + table_ + " (id BIGINT PRIMARY KEY, name VARCHAR(200), n BIGINT)" +
                       (mysql() ? " DEFAULT CHARSET=utf8mb4" : ""));
  }

  void TearDown() override {
    if (table_.empty() || GetParam().uri.empty()) return;
    try {
      open(GetParam().uri)->exec_direct("DROP TABLE IF EXISTS " + table_);
    } catch (const error& e) {
      ADD_FAILURE() << "cannot drop " << table_ << ": " << e.what();
    }
  }

  bool mysql() const { return GetParam().dialect == dialect_kind::mysql; }
  bool sqlite() const { return GetParam().dialect == dialect_kind::sqlite; }

  detail::result exec(const std::string& sql, std::vector<value> params = {}) { return conn_->exec(sql, params); }

  // The single field of a one-row, one-column result.
  static std::optional<std::string> scalar(const detail::result& r) {
    EXPECT_EQ(r.rows.size(), 1u);
    if (r.rows.size() != 1 || r.rows[0].size() != 1) {
      ADD_FAILURE() << "expected one row with one column";
      return std::nullopt;
    }
    return r.rows[0][0];
  }

  std::string count_rows(connection& c) {
    return scalar(c.exec("SELECT COUNT(*) FROM " + table_, {})).value_or("NULL");
  }

  std::string table_;
  std::unique_ptr<connection> conn_;
};

TEST_P(DriverConformance, SessionIsSetUpForSqllock) {
  switch (GetParam().dialect) {
    case dialect_kind::mysql: {
      // Strict mode (bad values fail instead of being truncated), UTC, and 4-byte UTF-8.
      const auto r = conn_->exec_direct(
          "SELECT @@SESSION.sql_mode, @@SESSION.time_zone, @@SESSION.character_set_client");
      ASSERT_EQ(r.rows.size(), 1u);
      const std::string mode = r.rows[0][0].value_or("");
      for (const char* flag : {"STRICT_ALL_TABLES", "NO_ZERO_DATE", "NO_ZERO_IN_DATE", "ERROR_FOR_DIVISION_BY_ZERO",
                               "NO_ENGINE_SUBSTITUTION"}) {
        EXPECT_NE(mode.find(flag), std::string::npos) << flag << " missing from " << mode;
      }
      EXPECT_EQ(r.rows[0][1], "+00:00");
      EXPECT_EQ(r.rows[0][2], "utf8mb4");
      break;
    }
    case dialect_kind::sqlite:
      // WAL with synchronous=NORMAL (1), and a busy timeout: many processes share the file.
      EXPECT_EQ(scalar(conn_->exec_direct("PRAGMA journal_mode")), "wal");
      EXPECT_EQ(scalar(conn_->exec_direct("PRAGMA synchronous")), "1");
      EXPECT_GE(std::stoll(scalar(conn_->exec_direct("PRAGMA busy_timeout")).value_or("0")), 1000);
      break;
    case dialect_kind::postgresql: break;  // libpq's defaults are what sqllock needs
  }
}

TEST_P(DriverConformance, BindsInt64RoundTrip) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  const std::int64_t small = std::numeric_limits<std::int64_t>::min();
  exec("INSERT INTO " + table_ + " (id, name, n) VALUES ($1, $2, $3)", {std::int64_t{1}, std::string("max"), big});
  exec("INSERT INTO " + table_ + " (id, name, n) VALUES ($1, $2, $3)", {std::int64_t{2}, std::string("min"), small});
  EXPECT_EQ(scalar(exec("SELECT n FROM " + table_ + " WHERE id = $1", {std::int64_t{1}})), std::to_string(big));
  EXPECT_EQ(scalar(exec("SELECT n FROM " + table_ + " WHERE id = $1", {std::int64_t{2}})), std::to_string(small));
  // An integer parameter takes part in arithmetic as a number.
  EXPECT_EQ(scalar(exec("SELECT n + $1 FROM " + table_ + " WHERE id = $2", {std::int64_t{-1}, std::int64_t{1}})),
            std::to_string(big - 1));
}

TEST_P(DriverConformance, BindsTextWithUtf8AndQuotes) {
  const std::vector<std::string> texts = {
      "zażółć gęślą jaźń — 日本語 🚀",
      "it's \"quoted\" `back` \\ slash; DROP TABLE x; --",
      ":p1 ?  $1 %s :name",
      "",
  };
  std::int64_t id = 0;
  for (const auto& text : texts) {
    exec("INSERT INTO " + table_ + " (id, name) VALUES ($1, $2)", {++id, text});
    EXPECT_EQ(scalar(exec("SELECT name FROM " + table_ + " WHERE id = $1", {id})), text);
    EXPECT_EQ(scalar(exec("SELECT id FROM " + table_ + " WHERE name = $1", {text})), std::to_string(id));
  }
}

TEST_P(DriverConformance, TextWithNulByteRoundTripsOrIsRefused) {
  const std::string text("a\0b", 3);
  const std::string insert = "INSERT INTO " + table_ + " (id, name) VALUES ($1, $2)";
  if (GetParam().dialect == dialect_kind::postgresql) {
    // PostgreSQL text cannot hold NUL, and libpq would cut the value short: refuse it up front.
    EXPECT_THROW(exec(insert, {std::int64_t{1}, text}), invalid_argument);
    EXPECT_FALSE(conn_->broken());
    return;
  }
  exec(insert, {std::int64_t{1}, text});
  EXPECT_EQ(scalar(exec("SELECT name FROM " + table_ + " WHERE id = $1", {std::int64_t{1}})), text);
}

TEST_P(DriverConformance, BindsNull) {
  exec("INSERT INTO " + table_ + " (id, name, n) VALUES ($1, $2, $3)", {std::int64_t{1}, value{}, value{}});
  const auto r = exec("SELECT name, n FROM " + table_ + " WHERE id = $1", {std::int64_t{1}});
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0], (detail::row{std::nullopt, std::nullopt}));
  // The same statement with values where NULLs were, then NULLs again.
  exec("INSERT INTO " + table_ + " (id, name, n) VALUES ($1, $2, $3)",
       {std::int64_t{2}, std::string("x"), std::int64_t{7}});
  exec("INSERT INTO " + table_ + " (id, name, n) VALUES ($1, $2, $3)", {std::int64_t{3}, value{}, value{}});
  EXPECT_EQ(scalar(exec("SELECT COUNT(*) FROM " + table_ + " WHERE name IS NULL AND n IS NULL", {})), "2");
  EXPECT_EQ(scalar(exec("SELECT n FROM " + table_ + " WHERE name = $1", {std::string("x")})), "7");
}

TEST_P(DriverConformance, RepeatedPlaceholderTakesTheSameValue) {
  exec("INSERT INTO " + table_ + " (id, name, n) VALUES ($1, $2, $1)", {std::int64_t{42}, std::string("a")});
  // PostgreSQL deduces one type per $N from all its uses (libpq passes $N through), so a repeated
  // $N must be used where the same type is expected: `$2 + 1` next to a BIGINT column would be
  // "inconsistent types deduced" on pqxx; cast explicitly in such SQL.
  exec("INSERT INTO " + table_ + " (id, name, n) VALUES ($2, $1, $2)", {std::string("b"), std::int64_t{7}});
  const auto r = exec("SELECT id, name, n FROM " + table_ + " WHERE id = $1 OR n = $1 ORDER BY id", {std::int64_t{7}});
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0], (detail::row{"7", "b", "7"}));
  EXPECT_EQ(scalar(exec("SELECT n FROM " + table_ + " WHERE id = $1 AND n = $1", {std::int64_t{42}})), "42");
}

TEST_P(DriverConformance, PlaceholdersInsideLiteralsAndCommentsAreText) {
  exec("INSERT INTO " + table_ + " (id, name) VALUES ($1, 'cost: $1 and ''$2'' :p1 ?')", {std::int64_t{1}});
  EXPECT_EQ(scalar(exec("SELECT name FROM " + table_ + " WHERE id = $1", {std::int64_t{1}})),
            "cost: $1 and '$2' :p1 ?");
  EXPECT_EQ(scalar(exec("SELECT name FROM " + table_ + " WHERE name <> $1", {std::string("$1")})),
            "cost: $1 and '$2' :p1 ?");
  // Comments may hold anything a parser could mistake for a parameter.
  EXPECT_EQ(
      scalar(exec("SELECT /* note: $2 :p2 ? */ id FROM " + table_ + " -- why: $3\n WHERE id = $1", {std::int64_t{1}})),
      "1");
}

TEST_P(DriverConformance, AffectedRows) {
  const std::string insert = "INSERT INTO " + table_ + " (id, name, n) VALUES ($1, $2, $3)";
  EXPECT_EQ(exec(insert, {std::int64_t{1}, std::string("a"), std::int64_t{10}}).affected, 1u);
  EXPECT_EQ(exec("INSERT INTO " + table_ + " (id, name, n) VALUES ($1, 'b', 20), ($2, 'c', 30)",
                 {std::int64_t{2}, std::int64_t{3}})
                .affected,
            2u);
  EXPECT_EQ(exec("UPDATE " + table_ + " SET n = n + 1 WHERE n >= $1", {std::int64_t{20}}).affected, 2u);
  EXPECT_EQ(exec("UPDATE " + table_ + " SET n = n + 1 WHERE id = $1", {std::int64_t{99}}).affected, 0u);
  // An UPDATE that matches rows but changes nothing: MySQL counts changed rows (sqllock's MySQL
  // sessions never set CLIENT_FOUND_ROWS), PostgreSQL and SQLite count matched rows.
  EXPECT_EQ(exec("UPDATE " + table_ + " SET name = name WHERE id <= $1", {std::int64_t{2}}).affected,
            mysql() ? 0u : 2u);
  // Queries change nothing, whatever row count the server reports for them.
  EXPECT_EQ(exec("SELECT id FROM " + table_ + " WHERE id <= $1", {std::int64_t{3}}).affected, 0u);
  EXPECT_EQ(conn_->exec_direct("SELECT id FROM " + table_).affected, 0u);
  EXPECT_EQ(exec("DELETE FROM " + table_ + " WHERE id >= $1", {std::int64_t{2}}).affected, 2u);
  EXPECT_EQ(conn_->exec_direct("DELETE FROM " + table_).affected, 1u);
}

TEST_P(DriverConformance, ReturnsRowsAndColumnsInOrder) {
  for (std::int64_t id = 1; id <= 3; ++id) {
    exec("INSERT INTO " + table_ + " (id, name, n) VALUES ($1, $2, $3)", {id, "row" + std::to_string(id), id * 100});
  }
  const auto r = exec("SELECT name, id, n FROM " + table_ + " WHERE id >= $1 ORDER BY id DESC", {std::int64_t{2}});
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0], (detail::row{"row3", "3", "300"}));
  EXPECT_EQ(r.rows[1], (detail::row{"row2", "2", "200"}));
  EXPECT_TRUE(exec("SELECT id FROM " + table_ + " WHERE id > $1", {std::int64_t{3}}).rows.empty());
  const auto direct = conn_->exec_direct("SELECT id, name FROM " + table_ + " ORDER BY id");
  ASSERT_EQ(direct.rows.size(), 3u);
  EXPECT_EQ(direct.rows[2], (detail::row{"3", "row3"}));
}

TEST_P(DriverConformance, InsertReturningReturnsRows) {
  if (mysql()) {
    const auto version = scalar(conn_->exec_direct("SELECT VERSION()")).value_or("");
    if (version.find("MariaDB") == std::string::npos) GTEST_SKIP() << "MySQL has no INSERT … RETURNING";
  }
  const auto r = exec("INSERT INTO " + table_ + " (id, name, n) VALUES ($1, $2, $1) RETURNING n, name",
                      {std::int64_t{21}, std::string("r")});
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0], (detail::row{"21", "r"}));
  EXPECT_EQ(count_rows(*conn_), "1");
}

TEST_P(DriverConformance, CommitAndRollbackThroughExecDirect) {
  auto other = open(GetParam().uri);
  conn_->exec_direct("BEGIN");
  exec("INSERT INTO " + table_ + " (id, name) VALUES ($1, $2)", {std::int64_t{1}, std::string("kept")});
  conn_->exec_direct("COMMIT");
  EXPECT_EQ(count_rows(*other), "1");

  conn_->exec_direct("BEGIN");
  exec("INSERT INTO " + table_ + " (id, name) VALUES ($1, $2)", {std::int64_t{2}, std::string("dropped")});
  EXPECT_EQ(count_rows(*conn_), "2");
  conn_->exec_direct("ROLLBACK");
  EXPECT_EQ(count_rows(*conn_), "1");
  EXPECT_EQ(count_rows(*other), "1");
}

TEST_P(DriverConformance, SameStatementRunsAThousandTimes) {
  const std::string insert = "INSERT INTO " + table_ + " (id, name, n) VALUES ($1, $2, $3)";
  const std::string select = "SELECT n FROM " + table_ + " WHERE id = $1";
  conn_->exec_direct("BEGIN");  // one transaction: SQLite and the servers commit once, not 1000×
  for (std::int64_t id = 1; id <= 1000; ++id) {
    ASSERT_EQ(exec(insert, {id, std::string("n").append(std::to_string(id)), id * 3}).affected, 1u) << "at " << id;
    ASSERT_EQ(scalar(exec(select, {id})), std::to_string(id * 3)) << "at " << id;
  }
  conn_->exec_direct("COMMIT");
  EXPECT_EQ(count_rows(*conn_), "1000");
}

TEST_P(DriverConformance, FailedStatementCanRunAgain) {
  const std::string insert = "INSERT INTO " + table_ + " (id, name) VALUES ($1, $2)";
  exec(insert, {std::int64_t{1}, std::string("a")});
  EXPECT_THROW(exec(insert, {std::int64_t{1}, std::string("b")}), backend_error);
  EXPECT_FALSE(conn_->broken());
  // The failed call's values must not linger: a NULL now is a NULL.
  EXPECT_EQ(exec(insert, {std::int64_t{2}, value{}}).affected, 1u);
  EXPECT_EQ(scalar(exec("SELECT name FROM " + table_ + " WHERE id = $1", {std::int64_t{2}})), std::nullopt);
  EXPECT_EQ(exec(insert, {std::int64_t{3}, std::string("c")}).affected, 1u);
  EXPECT_EQ(count_rows(*conn_), "3");
}

TEST_P(DriverConformance, WrongParameterCountIsInvalidArgument) {
  EXPECT_THROW(exec("SELECT id FROM " + table_ + " WHERE id = $1 AND n = $2", {std::int64_t{1}}), invalid_argument);
  EXPECT_FALSE(conn_->broken());
}

TEST_P(DriverConformance, SyntaxErrorIsBackendErrorWithDialectCode) {
  for (int direct = 0; direct < 2; ++direct) {
    SCOPED_TRACE(direct ? "exec_direct" : "exec");
    try {
      if (direct) {
        conn_->exec_direct("SELEC 1");
      } else {
        exec("SELEC $1", {std::int64_t{1}});
      }
      ADD_FAILURE() << "no exception";
    } catch (const backend_error& e) {
      switch (GetParam().dialect) {
        case dialect_kind::postgresql: EXPECT_EQ(e.sqlstate(), "42601") << e.what(); break;
        case dialect_kind::mysql:
          EXPECT_EQ(e.sqlstate(), "42000") << e.what();
          EXPECT_EQ(e.vendor_code(), 1064) << e.what();  // ER_PARSE_ERROR
          break;
        case dialect_kind::sqlite:
          EXPECT_EQ(e.sqlstate(), "") << e.what();
          EXPECT_EQ(e.vendor_code(), 1) << e.what();  // SQLITE_ERROR
          break;
      }
    }
    EXPECT_FALSE(conn_->broken());
  }
  EXPECT_EQ(scalar(exec("SELECT COUNT(*) FROM " + table_, {})), "0");
}

TEST_P(DriverConformance, UniqueViolationIsBackendError) {
  const std::string insert = "INSERT INTO " + table_ + " (id, name) VALUES ($1, $2)";
  exec(insert, {std::int64_t{1}, std::string("a")});
  try {
    exec(insert, {std::int64_t{1}, std::string("b")});
    ADD_FAILURE() << "no exception";
  } catch (const backend_error& e) {
    switch (GetParam().dialect) {
      case dialect_kind::postgresql: EXPECT_EQ(e.sqlstate(), "23505") << e.what(); break;
      case dialect_kind::mysql:
        EXPECT_EQ(e.sqlstate(), "23000") << e.what();
        EXPECT_EQ(e.vendor_code(), 1062) << e.what();  // ER_DUP_ENTRY
        break;
      case dialect_kind::sqlite:
        EXPECT_EQ(e.vendor_code() & 0xff, 19) << e.what();  // SQLITE_CONSTRAINT (+ extended bits)
        break;
    }
  }
  EXPECT_FALSE(conn_->broken());
}

TEST_P(DriverConformance, UnreachableServerIsConnectionError) {
  auto spec = detail::parse_uri(GetParam().uri);
  std::string uri = GetParam().uri;
  if (sqlite()) {
    uri = "sqlite:///nonexistent-sqllock-dir/" + table_ + "/locks.db";
  } else {
    ASSERT_TRUE(spec.port.has_value()) << "the test URI needs an explicit port";
    const std::string old_port = ":" + std::to_string(*spec.port);
    const auto at = uri.find(old_port, uri.find('@') == std::string::npos ? 0 : uri.find('@'));
    ASSERT_NE(at, std::string::npos);
    uri.replace(at, old_port.size(), ":" + std::to_string(unused_port()));
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(open(uri), connection_error) << uri;
  EXPECT_LT(std::chrono::steady_clock::now() - start, kTimeout + 2s);
}

TEST_P(DriverConformance, KilledSessionIsConnectionErrorAndBroken) {
  if (sqlite()) GTEST_SKIP() << "SQLite has no server session to kill";
  auto killer = open(GetParam().uri);
  if (mysql()) {
    const std::string id = scalar(conn_->exec_direct("SELECT CONNECTION_ID()")).value_or("0");
    killer->exec_direct("KILL " + id);
    // KILL only marks the session; wait until the server has ended it.
    for (int i = 0; i < 500; ++i) {
      const std::vector<value> params{std::int64_t{std::stoll(id)}};
      const auto left = killer->exec("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = $1", params);
      if (scalar(left) == "0") break;
      std::this_thread::sleep_for(10ms);
    }
  } else {
    const std::string pid = scalar(conn_->exec_direct("SELECT pg_backend_pid()")).value_or("0");
    // With a timeout, pg_terminate_backend waits until the backend has exited.
    const std::vector<value> params{std::int64_t{std::stoll(pid)}};
    EXPECT_EQ(scalar(killer->exec("SELECT pg_terminate_backend($1, 5000)", params)), "t");
  }
  EXPECT_THROW(exec("SELECT COUNT(*) FROM " + table_ + " WHERE id = $1", {std::int64_t{1}}), connection_error);
  EXPECT_TRUE(conn_->broken());
  // A broken connection stays broken: no silent reconnect.
  EXPECT_THROW(conn_->exec_direct("SELECT 1"), connection_error);
  EXPECT_TRUE(conn_->broken());
}

TEST_P(DriverConformance, AbandonInForkedChildLeavesParentSessionAlone) {
  // Prepare a statement first, so that the child also has one to let go of.
  EXPECT_EQ(scalar(exec("SELECT COUNT(*) FROM " + table_ + " WHERE id = $1", {std::int64_t{1}})), "0");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    conn_->abandon();
    const bool ok = conn_->broken();
    conn_.reset();
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(conn_->broken());
  exec("INSERT INTO " + table_ + " (id, name) VALUES ($1, $2)", {std::int64_t{1}, std::string("after fork")});
  EXPECT_EQ(scalar(exec("SELECT name FROM " + table_ + " WHERE id = $1", {std::int64_t{1}})), "after fork");
}

// A read-only server session (a primary that failover demoted but that still accepts
// connections) fails every write with 25006; both PostgreSQL drivers report it and discard the
// connection, so the pool connects anew through the URI (target_session_attrs=read-write).
TEST(PostgresqlDrivers, AReadOnlySessionIsReportedAndDiscarded) {
  const std::string uri = postgres_uri().value_or("");
  SQLLOCK_REQUIRE_SERVER(uri);
  for (const std::string prefix : {"", "soci+"}) {
    auto conn = detail::open_connection(detail::parse_uri(prefix + uri), 5s);
    conn->exec_direct("SET default_transaction_read_only = on");
    try {
      conn->exec("CREATE TEMPORARY TABLE read_only_probe (id integer)", {});
      ADD_FAILURE() << prefix << ": a write succeeded on a read-only session";
    } catch (const backend_error& e) {
      EXPECT_EQ(e.sqlstate(), "25006") << prefix << e.what();
    }
    EXPECT_TRUE(conn->broken()) << prefix << ": the read-only connection would go back to the pool";
  }
}

// As the owner: the drivers' tests create and drop their own tables.
INSTANTIATE_TEST_SUITE_P(AllTargets, DriverConformance, ::testing::ValuesIn(as_owner(all_targets())),
                         [](const ::testing::TestParamInfo<target>& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
