// Row locks inside an application's own transaction: the adapters for libpqxx, SOCI (PostgreSQL,
// MySQL, and SQLite's refusal) and MySQL Connector/C++, against the private test servers.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>

#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/transaction>
#include <soci/mysql/soci-mysql.h>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include "common/uri.hpp"
#include "driver/libpq_uri.hpp"
#include "driver/mysql/cppconn.hpp"
#include "sqllock/adapters/mysql.hpp"
#include "sqllock/adapters/pqxx.hpp"
#include "sqllock/adapters/soci.hpp"
#include "sqllock/error.hpp"
#include "sqllock/migrate.hpp"
#include "support/fresh_database.hpp"
#include "support/processes.hpp"
#include "support/stop_after.hpp"
#include "support/test_env.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// One application-owned connection and its transaction, driven through one adapter.
class app_session {
 public:
  virtual ~app_session() = default;
  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() = 0;
  // Runs `sql` in the open transaction (or on its own when none is open).
  virtual void exec(const std::string& sql) = 0;
  // The first field of the first row of `sql`, run like exec().
  virtual std::string scalar(const std::string& sql) = 0;
  virtual void lock(std::string_view name, std::string_view table) = 0;
  virtual bool try_lock(std::string_view name, std::string_view table) = 0;
  virtual bool try_lock_for(std::string_view name, std::chrono::milliseconds timeout, std::string_view table) = 0;
  // lock() and try_lock_for() whose wait a stop on `stop` ends.
  virtual bool lock(std::string_view name, std::stop_token stop, std::string_view table) = 0;
  virtual bool try_lock_for(std::string_view name, std::chrono::milliseconds timeout, std::stop_token stop,
                            std::string_view table) = 0;
  // lock() with no transaction open (autocommit).
  virtual void lock_in_autocommit(std::string_view name, std::string_view table) = 0;
};

class pqxx_session final : public app_session {
 public:
  explicit pqxx_session(const std::string& uri) : conn_(uri) {}
  void begin() override { tx_ = std::make_unique<pqxx::work>(conn_); }
  void commit() override {
    tx_->commit();
    tx_.reset();
  }
  void rollback() override {
    tx_->abort();
    tx_.reset();
  }
  void exec(const std::string& sql) override { run(sql); }
  std::string scalar(const std::string& sql) override { return run(sql).at(0).at(0).c_str(); }
  void lock(std::string_view name, std::string_view table) override { lock_row(*tx_, name, table); }
  bool try_lock(std::string_view name, std::string_view table) override { return try_lock_row(*tx_, name, table); }
  bool try_lock_for(std::string_view name, std::chrono::milliseconds t, std::string_view table) override {
    return try_lock_row_for(*tx_, name, t, table);
  }
  bool lock(std::string_view name, std::stop_token stop, std::string_view table) override {
    return lock_row(*tx_, name, std::move(stop), table);
  }
  bool try_lock_for(std::string_view name, std::chrono::milliseconds t, std::stop_token stop,
                    std::string_view table) override {
    return try_lock_row_for(*tx_, name, t, std::move(stop), table);
  }
  void lock_in_autocommit(std::string_view name, std::string_view table) override {
    pqxx::nontransaction n(conn_);
    lock_row(n, name, table);
  }

 private:
  pqxx::result run(const std::string& sql) {
    if (tx_) return tx_->exec(sql);
    pqxx::nontransaction n(conn_);
    return n.exec(sql);
  }
  pqxx::connection conn_;
  std::unique_ptr<pqxx::work> tx_;
};

class soci_app_session final : public app_session {
 public:
  soci_app_session(const soci::backend_factory& backend, const std::string& connect) : session_(backend, connect) {}
  void begin() override { tx_ = std::make_unique<soci::transaction>(session_); }
  void commit() override {
    tx_->commit();
    tx_.reset();
  }
  void rollback() override {
    tx_->rollback();
    tx_.reset();
  }
  void exec(const std::string& sql) override { session_ << sql; }
  std::string scalar(const std::string& sql) override {
    std::string out;
    soci::indicator ind;
    session_ << sql, soci::into(out, ind);
    return ind == soci::i_null ? "NULL" : out;
  }
  void lock(std::string_view name, std::string_view table) override { lock_row(session_, name, table); }
  bool try_lock(std::string_view name, std::string_view table) override { return try_lock_row(session_, name, table); }
  bool try_lock_for(std::string_view name, std::chrono::milliseconds t, std::string_view table) override {
    return try_lock_row_for(session_, name, t, table);
  }
  bool lock(std::string_view name, std::stop_token stop, std::string_view table) override {
    return lock_row(session_, name, std::move(stop), table);
  }
  bool try_lock_for(std::string_view name, std::chrono::milliseconds t, std::stop_token stop,
                    std::string_view table) override {
    return try_lock_row_for(session_, name, t, std::move(stop), table);
  }
  void lock_in_autocommit(std::string_view name, std::string_view table) override { lock_row(session_, name, table); }

 private:
  soci::session session_;
  std::unique_ptr<soci::transaction> tx_;
};

class cppconn_session final : public app_session {
 public:
  explicit cppconn_session(const detail::connection_spec& spec) {
    auto* driver = sql::mysql::get_mysql_driver_instance();
    conn_.reset(driver->connect("tcp://" + spec.host + ":" + std::to_string(spec.port.value_or(3306)), spec.user,
                                spec.password));
    conn_->setSchema(spec.database);
  }
  void begin() override { conn_->setAutoCommit(false); }
  void commit() override { conn_->commit(); }
  void rollback() override { conn_->rollback(); }
  void exec(const std::string& sql) override {
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    st->execute(sql);
  }
  std::string scalar(const std::string& sql) override {
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    std::unique_ptr<sql::ResultSet> rs(st->executeQuery(sql));
    rs->next();
    return rs->getString(1).asStdString();
  }
  void lock(std::string_view name, std::string_view table) override { lock_row(conn_.get(), name, table); }
  bool try_lock(std::string_view name, std::string_view table) override {
    return try_lock_row(conn_.get(), name, table);
  }
  bool try_lock_for(std::string_view name, std::chrono::milliseconds t, std::string_view table) override {
    return try_lock_row_for(conn_.get(), name, t, table);
  }
  bool lock(std::string_view name, std::stop_token stop, std::string_view table) override {
    return lock_row(conn_.get(), name, std::move(stop), table);
  }
  bool try_lock_for(std::string_view name, std::chrono::milliseconds t, std::stop_token stop,
                    std::string_view table) override {
    return try_lock_row_for(conn_.get(), name, t, std::move(stop), table);
  }
  void lock_in_autocommit(std::string_view name, std::string_view table) override {
    conn_->setAutoCommit(true);
    lock_row(conn_.get(), name, table);
  }

 private:
  std::unique_ptr<sql::Connection> conn_;
};

// SOCI's mysql connect string for a mysql:// test URI.
std::string soci_mysql_connect(const detail::connection_spec& spec) {
  return "host=" + spec.host + " port=" + std::to_string(spec.port.value_or(3306)) + " user=" + spec.user +
         " password=" + spec.password + " db=" + spec.database;
}

struct adapter_target {
  std::string name;
  dialect_kind dialect;
  // The sqllock URI of the same database as the runtime role (see test_env.hpp), which the
  // application connections use too; empty when the server is not configured.
  std::string uri;
  std::string owner_uri;  // as the owner, who migrates and creates the test's data table
};
void PrintTo(const adapter_target& t, std::ostream* os) { *os << t.name; }

std::vector<adapter_target> adapter_targets() {
  std::string pg, pg_owner, my, my_owner;
  for (const auto& t : all_targets()) {
    if (t.name == "pqxx_postgresql") pg = t.uri, pg_owner = t.owner_uri;
    if (t.name == "mysql_mariadb") my = t.uri, my_owner = t.owner_uri;
  }
  return {{"pqxx_postgresql", dialect_kind::postgresql, pg, pg_owner},
          {"soci_postgresql", dialect_kind::postgresql, pg, pg_owner},
          {"soci_mysql", dialect_kind::mysql, my, my_owner},
          {"mysqlcppconn_mariadb", dialect_kind::mysql, my, my_owner}};
}

class RowLockAdapterTest : public ::testing::TestWithParam<adapter_target> {
 protected:
  void SetUp() override {
    SQLLOCK_REQUIRE_SERVER(GetParam().uri);
    table_ = unique_name("lk");
    database_options o;
    o.table = table_;
    database owner(GetParam().owner_uri, o);
    migrate(owner);
    data_ = unique_name("data");
    sql(owner, "CREATE TABLE " + data_ + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
    db_ = std::make_unique<database>(GetParam().uri, o);
  }

  // A new application connection of the parameter's kind.
  std::unique_ptr<app_session> connect() const {
    const auto spec = detail::parse_uri(GetParam().uri);
    const std::string& name = GetParam().name;
    if (name == "pqxx_postgresql") return std::make_unique<pqxx_session>(spec.native_uri);
    if (name == "soci_postgresql")
      return std::make_unique<soci_app_session>(soci::postgresql,
                                                detail::libpq_uri_with_connect_timeout(spec.native_uri, 5s));
    if (name == "soci_mysql") return std::make_unique<soci_app_session>(soci::mysql, soci_mysql_connect(spec));
    return std::make_unique<cppconn_session>(spec);
  }

  bool mysql() const { return GetParam().dialect == dialect_kind::mysql; }
  std::int64_t data_rows() const {
    return std::stoll(sql(*db_, "SELECT COUNT(*) FROM " + data_).rows.at(0).at(0).value());
  }
  std::string insert(int id) const {
    return "INSERT INTO " + data_ + " (id, v) VALUES (" + std::to_string(id) + ", 0)";
  }

  std::string table_;
  std::string data_;
  std::unique_ptr<database> db_;
};

TEST_P(RowLockAdapterTest, CommitKeepsTheWritesAndReleasesTheLock) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("account", table_);
  a->exec(insert(1));
  b->begin();
  EXPECT_FALSE(b->try_lock("account", table_)) << "held by a's transaction";
  a->commit();
  EXPECT_TRUE(b->try_lock("account", table_)) << "a's commit released it";
  b->commit();
  EXPECT_EQ(data_rows(), 1);
  EXPECT_EQ(sql(*db_, "SELECT COUNT(*) FROM " + table_).rows.at(0).at(0), "0") << "the lock table is untouched";
}

TEST_P(RowLockAdapterTest, RollbackUndoesTheWritesAndReleasesTheLock) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("account", table_);
  a->exec(insert(1));
  a->rollback();
  b->begin();
  EXPECT_TRUE(b->try_lock("account", table_));
  b->commit();
  EXPECT_EQ(data_rows(), 0);
}

TEST_P(RowLockAdapterTest, ARefusedTryLeavesTheCallersTransactionUsable) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("busy", table_);
  b->begin();
  b->exec(insert(1));
  const auto start = clock_type::now();
  EXPECT_FALSE(b->try_lock("busy", table_));
  EXPECT_LT(clock_type::now() - start, scaled(1s));
  b->exec(insert(2));  // PostgreSQL would refuse this if the refusal had aborted the transaction
  b->commit();
  a->commit();
  EXPECT_EQ(data_rows(), 2) << "the caller's writes before and after the refusal both committed";
}

TEST_P(RowLockAdapterTest, ATimedTryGivesUpAfterTheTimeoutAndRestoresTheSetting) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("slow", table_);
  b->begin();
  const std::string show = mysql() ? "SELECT @@SESSION.innodb_lock_wait_timeout" : "SHOW lock_timeout";
  b->exec(mysql() ? "SET SESSION innodb_lock_wait_timeout = 7" : "SET LOCAL lock_timeout = '7s'");
  const auto start = clock_type::now();
  EXPECT_FALSE(b->try_lock_for("slow", 300ms, table_));
  const auto waited = clock_type::now() - start;
  EXPECT_GE(waited, mysql() ? 1s : 300ms);
  EXPECT_LT(waited, scaled(3s));
  EXPECT_EQ(b->scalar(show), mysql() ? "7" : "7s") << "the caller's setting is back after a timeout";
  a->commit();
  EXPECT_TRUE(b->try_lock_for("slow", 2s, table_));
  EXPECT_EQ(b->scalar(show), mysql() ? "7" : "7s") << "and after success";
  b->exec(insert(1));
  b->commit();
  EXPECT_EQ(data_rows(), 1);
}

// lock_row(…, stop) and try_lock_row_for(…, stop): a stop ends the wait with false, the caller's
// transaction usable (its writes before and after commit) and without the lock; a stop before the
// call leaves one attempt without waiting. MySQL's attempts last a whole second each.
TEST_P(RowLockAdapterTest, AStopEndsTheWaitAndLeavesTheTransactionUsable) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("stopped", table_);
  b->begin();
  b->exec(insert(1));
  for (const bool timed : {false, true}) {
    SCOPED_TRACE(timed ? "try_lock_row_for(30 s, stop)" : "lock_row(stop)");
    std::stop_source stop;
    const stop_after stopper(stop, 300ms);
    const bool got = timed ? b->try_lock_for("stopped", 30s, stop.get_token(), table_)
                           : b->lock("stopped", stop.get_token(), table_);
    const auto took = clock_type::now() - stopper.started();
    EXPECT_FALSE(got);
    EXPECT_GE(took, 300ms) << "ended before the stop";
    EXPECT_LT(took, scaled(mysql() ? 2500ms : 1300ms)) << "the stop did not end the wait promptly";
  }
  std::stop_source stopped;
  stopped.request_stop();
  const auto start = clock_type::now();
  EXPECT_FALSE(b->lock("stopped", stopped.get_token(), table_));
  EXPECT_LT(clock_type::now() - start, scaled(1s)) << "a stop before the call waits not at all";
  b->exec(insert(2));
  a->commit();
  EXPECT_TRUE(b->lock("stopped", stopped.get_token(), table_)) << "one attempt, granted on a free row";
  auto c = connect();
  c->begin();
  EXPECT_FALSE(c->try_lock("stopped", table_)) << "b holds it now";
  c->rollback();
  b->commit();
  EXPECT_EQ(data_rows(), 2) << "the caller's writes before and after the stopped waits both committed";
}

// A wait that can be stopped but is not goes on across its attempts until the holder lets go.
TEST_P(RowLockAdapterTest, AStoppableWaitIsGrantedWhenTheHolderCommits) {
  auto a = connect();
  auto b = connect();
  a->begin();
  a->lock("handed", table_);
  b->begin();
  const auto hold_for = mysql() ? 2500ms : 700ms;  // across more than two attempts
  std::thread holder([&] {
    std::this_thread::sleep_for(hold_for);
    a->commit();
  });
  std::stop_source never;
  const auto start = clock_type::now();
  const bool got = b->lock("handed", never.get_token(), table_);
  const auto took = clock_type::now() - start;
  holder.join();
  EXPECT_TRUE(got);
  EXPECT_GE(took, hold_for);
  b->exec(insert(1));
  b->commit();
  EXPECT_EQ(data_rows(), 1);
}

TEST_P(RowLockAdapterTest, AutocommitIsRefused) {
  auto a = connect();
  EXPECT_THROW(a->lock_in_autocommit("x", table_), invalid_argument);
}

TEST_P(RowLockAdapterTest, BadInputIsRefused) {
  auto a = connect();
  a->begin();
  EXPECT_THROW(a->lock("", table_), invalid_argument);
  EXPECT_THROW(a->lock(std::string(256, 'n'), table_), invalid_argument);
  EXPECT_THROW(a->lock("x", "bad-table"), invalid_argument);
  EXPECT_THROW(a->lock("x", ""), invalid_argument);
  EXPECT_THROW(a->lock("x", unique_name("never_migrated")), schema_error);
  a->exec(insert(1));  // still usable: the failed attempt rolled back to its savepoint (PostgreSQL)
  a->commit();
  EXPECT_EQ(data_rows(), 1);
}

TEST_P(RowLockAdapterTest, ADeadlockNamesTheVictimAndSaysRetry) {
  auto a = connect();
  auto b = connect();
  a->begin();
  b->begin();
  a->lock("left", table_);
  b->lock("right", table_);
  std::string a_error;
  std::thread t([&] {
    try {
      a->lock("right", table_);  // waits for b
    } catch (const backend_error& e) {
      a_error = e.what();
      // PostgreSQL: only the attempt's savepoint was rolled back, the transaction goes on.
      if (!mysql()) {
        EXPECT_NO_THROW(a->scalar("SELECT 1"));
      }
      a->rollback();  // the survivor waits for the victim's whole transaction to end
    }
  });
  std::this_thread::sleep_for(200ms);
  std::string b_error;
  try {
    b->lock("left", table_);  // closes the cycle
  } catch (const backend_error& e) {
    b_error = e.what();
    if (!mysql()) {
      EXPECT_NO_THROW(b->scalar("SELECT 1"));
    }
    b->rollback();
  }
  t.join();
  ASSERT_NE(a_error.empty(), b_error.empty()) << "exactly one victim; a: " << a_error << " b: " << b_error;
  const std::string& message = a_error.empty() ? b_error : a_error;
  EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
  EXPECT_NE(message.find("retry"), std::string::npos) << message;
  if (a_error.empty()) a->rollback();
  if (b_error.empty()) b->rollback();
}

TEST_P(RowLockAdapterTest, FourProcessesIncrementACounterWithoutLosingAnUpdate) {
  constexpr int kProcesses = 4;
  constexpr int kRounds = 50;
  sql(*db_, "INSERT INTO " + data_ + " (id, v) VALUES (1, 0)");
  process_group group;
  for (int p = 0; p < kProcesses; ++p) {
    group.spawn([&] {
      auto s = connect();  // the child's own application connection
      for (int i = 0; i < kRounds; ++i) {
        s->begin();
        s->lock("counter", table_);
        const auto v = std::stoll(s->scalar("SELECT v FROM " + data_ + " WHERE id = 1"));
        std::this_thread::sleep_for(200us);
        s->exec("UPDATE " + data_ + " SET v = " + std::to_string(v + 1) + " WHERE id = 1");
        s->commit();
      }
      return 0;
    });
  }
  EXPECT_EQ(group.wait_all(), kProcesses);
  EXPECT_EQ(sql(*db_, "SELECT v FROM " + data_ + " WHERE id = 1").rows.at(0).at(0),
            std::to_string(kProcesses * kRounds));
}

TEST_P(RowLockAdapterTest, ThreeProcessesTakeNeverSeenNamesInTurnWithoutDeadlock) {
  // The first lock of a name creates its row inside the caller's transaction; the others must
  // queue behind that insert, not share a lock and deadlock (MySQL's INSERT IGNORE trap).
  constexpr int kProcesses = 3;
  constexpr int kNames = 20;
  const std::string prefix = unique_name("fresh");
  process_group group;
  for (int p = 0; p < kProcesses; ++p) {
    group.spawn([&, p] {
      auto s = connect();
      for (int i = 0; i < kNames; ++i) {
        s->begin();
        s->lock(prefix + "_" + std::to_string(i), table_);
        s->exec("INSERT INTO " + data_ + " (id, v) VALUES (" + std::to_string(i * kProcesses + p) + ", 0)");
        std::this_thread::sleep_for(1ms);
        s->commit();
      }
      return 0;
    });
  }
  EXPECT_EQ(group.wait_all(), kProcesses) << "a process failed (deadlock?)";
  EXPECT_EQ(data_rows(), kProcesses * kNames);
}

INSTANTIATE_TEST_SUITE_P(Adapters, RowLockAdapterTest, ::testing::ValuesIn(adapter_targets()),
                         [](const auto& info) { return info.param.name; });

TEST(RowLockAdapterSqliteTest, SociSqliteSaysNotSupported) {
  const auto spec = detail::parse_uri(sqlite_uri());
  soci::session session(soci::sqlite3, spec.path);
  soci::transaction tx(session);
  EXPECT_THROW(lock_row(session, "x"), not_supported);
  EXPECT_THROW((void)try_lock_row(session, "x"), not_supported);
  EXPECT_THROW((void)try_lock_row_for(session, "x", 1s), not_supported);
}

}  // namespace
}  // namespace sqllock::test
