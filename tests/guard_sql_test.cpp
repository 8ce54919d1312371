// The SQL guard (migration 6; docs/design.md, "Guarded writes"): what any client language calls in
// its own transaction, given only the lock's name and fence. PostgreSQL and MySQL/MariaDB:
// SELECT <table>_guard(name, fence), which raises SQLSTATE 45L01 when the lease is gone. SQLite,
// which has no server functions: the one-statement form UPDATE … SET fence = fence … RETURNING
// fence, which returns a row only while the lease is held. For every leased kind on every target
// (PgBouncer in transaction mode included), through each target's client library with bound
// parameters, as an application would: a guarded write commits while held; after a forced release
// the guard refuses and the write is rolled back; another owner's attempt on the expired lease
// waits for the guarded transaction, and — the control — gets in while an unguarded one is open.
#include <pqxx/pqxx>
#include <soci/mysql/soci-mysql.h>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include <atomic>
#include <optional>
#include <thread>

#include "common/sql_text.hpp"
#include "common/uri.hpp"
#include "contract/contract_fixture.hpp"
#include "driver/libpq_uri.hpp"
#include "driver/mysql/cppconn.hpp"
#include "sqllock/error.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// The SQLSTATE the SQL guard raises (MySQL/MariaDB: with error 1644, ER_SIGNAL_EXCEPTION).
constexpr const char* kGuardSqlstate = "45L01";

// What one guard statement did: passed (and returned the fence), or refused — with the server's
// error on PostgreSQL and MySQL/MariaDB, or no row on SQLite.
struct guard_outcome {
  bool passed = false;
  std::int64_t fence = -1;
  std::string sqlstate;  // "" when the driver does not say (SOCI's MySQL backend)
  long long vendor_code = 0;
  std::string message;
};

// An application connection through one client library, with bound parameters only.
class sql_app {
 public:
  virtual ~sql_app() = default;
  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() = 0;
  // `statement` (one placeholder per value, in the library's syntax) in the open transaction.
  virtual void insert(const std::string& statement, int id) = 0;
  // The guard statement with (name, fence) bound, in the open transaction.
  virtual guard_outcome guard(const std::string& statement, const std::string& name, std::int64_t fence) = 0;
};

class pqxx_app final : public sql_app {
 public:
  explicit pqxx_app(const std::string& uri) : conn_(uri) {}
  void begin() override { tx_.emplace(conn_); }
  void commit() override {
    tx_->commit();
    tx_.reset();
  }
  void rollback() override {
    tx_->abort();
    tx_.reset();
  }
  void insert(const std::string& statement, int id) override { tx_->exec_params(statement, id); }
  guard_outcome guard(const std::string& statement, const std::string& name, std::int64_t fence) override {
    guard_outcome out;
    try {
      const auto r = tx_->exec_params(statement, name, fence);
      out.passed = true;
      out.fence = r.at(0).at(0).as<std::int64_t>();
    } catch (const pqxx::sql_error& e) {
      out.sqlstate = e.sqlstate();
      out.message = e.what();
    }
    return out;
  }

 private:
  pqxx::connection conn_;
  std::optional<pqxx::work> tx_;
};

class soci_app final : public sql_app {
 public:
  soci_app(const soci::backend_factory& backend, const std::string& connect) : session_(backend, connect) {}
  void begin() override { tx_.emplace(session_); }
  void commit() override {
    tx_->commit();
    tx_.reset();
  }
  void rollback() override {
    tx_->rollback();
    tx_.reset();
  }
  void insert(const std::string& statement, int id) override { session_ << statement, soci::use(id); }
  guard_outcome guard(const std::string& statement, const std::string& name, std::int64_t fence) override {
    guard_outcome out;
    long long got = -1;
    long long bound = fence;
    soci::indicator ind = soci::i_null;
    try {
      // A one-time query: no named prepared statement left on a server connection PgBouncer shares.
      session_ << statement, soci::use(name, "name"), soci::use(bound, "fence"), soci::into(got, ind);
      out.passed = session_.got_data() && ind == soci::i_ok;  // SQLite: a row only while held
      out.fence = got;
    } catch (const soci::postgresql_soci_error& e) {
      out.sqlstate = e.sqlstate();
      out.message = e.what();
    } catch (const soci::mysql_soci_error& e) {
      out.vendor_code = e.err_num_;
      out.message = e.what();
    }
    return out;
  }

 private:
  soci::session session_;
  std::optional<soci::transaction> tx_;
};

class cppconn_app final : public sql_app {
 public:
  explicit cppconn_app(const detail::connection_spec& spec) {
    auto* driver = sql::mysql::get_mysql_driver_instance();
    conn_.reset(driver->connect("tcp://" + spec.host + ":" + std::to_string(spec.port.value_or(3306)), spec.user,
                                spec.password));
    conn_->setSchema(spec.database);
  }
  void begin() override { conn_->setAutoCommit(false); }
  void commit() override {
    conn_->commit();
    conn_->setAutoCommit(true);
  }
  void rollback() override {
    conn_->rollback();
    conn_->setAutoCommit(true);
  }
  void insert(const std::string& statement, int id) override {
    std::unique_ptr<sql::PreparedStatement> st(conn_->prepareStatement(statement));
    st->setInt(1, id);
    st->executeUpdate();
  }
  guard_outcome guard(const std::string& statement, const std::string& name, std::int64_t fence) override {
    guard_outcome out;
    try {
      std::unique_ptr<sql::PreparedStatement> st(conn_->prepareStatement(statement));
      st->setString(1, name);
      st->setInt64(2, fence);
      std::unique_ptr<sql::ResultSet> rs(st->executeQuery());
      out.passed = rs->next();
      if (out.passed) out.fence = rs->getInt64(1);
    } catch (const sql::SQLException& e) {
      out.sqlstate = e.getSQLState();
      out.vendor_code = e.getErrorCode();
      out.message = e.what();
    }
    return out;
  }

 private:
  std::unique_ptr<sql::Connection> conn_;
};

class GuardSqlTest : public LockContractTest {
 protected:
  void SetUp() override {
    LockContractTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    data_ = unique_name("data");
    sql(open_owner(), "CREATE TABLE " + data_ + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
  }

  bool pqxx() const { return where().name.starts_with("pqxx_") || where().name == "pgbouncer_pqxx"; }
  bool soci() const { return where().name.starts_with("soci_") || where().name == "pgbouncer_soci"; }

  std::unique_ptr<sql_app> app() const {
    const auto spec = detail::parse_uri(where().uri);
    if (pqxx()) return std::make_unique<pqxx_app>(spec.native_uri);
    if (where().name == "soci_sqlite")
      return std::make_unique<soci_app>(soci::sqlite3, "db=\"" + spec.path + "\" timeout=10");
    if (where().dialect == dialect_kind::postgresql)
      return std::make_unique<soci_app>(soci::postgresql, detail::libpq_uri_with_connect_timeout(spec.native_uri, 5s));
    if (soci())
      return std::make_unique<soci_app>(
          soci::mysql, "host=" + spec.host + " port=" + std::to_string(spec.port.value_or(3306)) +
                           " user=" + spec.user + " password=" + spec.password + " db=" + spec.database);
    return std::make_unique<cppconn_app>(spec);
  }

  // Placeholders in the client library's syntax: $n (libpqxx), :name (SOCI), ? (Connector/C++).
  std::string param(int n, const char* soci_name) const {
    if (pqxx()) return "$" + std::to_string(n);
    if (soci()) return std::string(":") + soci_name;
    return "?";
  }

  // The guard a client writes for this kind (README, "Safe writes under a lock").
  std::string guard_statement() const {
    const auto name = param(1, "name"), fence = param(2, "fence");
    if (where().dialect != dialect_kind::sqlite)
      return "SELECT " + detail::expand_table_template("{{table_guard}}", where().dialect, table_) + "(" + name + ", " +
             fence + ")";
    // SQLite: the lease table of the kind, and its fence column.
    const bool queued = kind().name == "fair_lock" || kind().name == "rw_lock";
    const std::string t = kind().name == "semaphore" ? table_ + "_permits" : queued ? table_ + "_queue" : table_;
    const std::string f = queued ? "ticket" : "fence";
    return "UPDATE " + t + " SET " + f + " = " + f + " WHERE resource = " + name + " AND " + f + " = " + fence +
           " AND expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now') RETURNING " + f;
  }
  std::string insert_statement() const {
    return "INSERT INTO " + data_ + " (id, v) VALUES (" + param(1, "id") + ", 0)";
  }

  // Every (name, fence) the lock holds now: one, or two for the multi_lock {name, companion}.
  std::vector<std::pair<std::string, std::int64_t>> held_rows(const lock_object& lock) const {
    std::vector<std::pair<std::string, std::int64_t>> out{{lock.name(), lock.fence()}};
    if (kind().name == "multi_lock") {
      const auto companion = companion_name(lock.name());
      const auto r = sql(open(), "SELECT fence FROM " + table_ + " WHERE resource = $1", {companion});
      out.emplace_back(companion, std::stoll(r.rows.at(0).at(0).value()));
    }
    return out;
  }

  // Guards every row of `rows` in app's open transaction; each must pass.
  void guard_all(sql_app& a, const std::vector<std::pair<std::string, std::int64_t>>& rows) {
    for (const auto& [name, fence] : rows) {
      const auto g = a.guard(guard_statement(), name, fence);
      EXPECT_TRUE(g.passed) << name << " fence " << fence << ": " << g.message;
      if (g.passed) {
        EXPECT_EQ(g.fence, fence) << "returns the fence";
      }
    }
  }

  std::int64_t data_rows() const {
    return std::stoll(sql(open(), "SELECT COUNT(*) FROM " + data_).rows.at(0).at(0).value());
  }

  static lock_settings lease(std::chrono::milliseconds ttl, bool renewed) {
    lock_settings s;
    s.ttl = ttl;
    s.auto_renew = renewed;
    return s;
  }

  struct takeover {
    bool before_commit = false;
    bool granted = false;
    clock_type::time_point granted_at{};
    clock_type::time_point committed_at{};
    std::string error;
  };
  // Another owner's attempt once a's lease has run out while a's transaction, guarded by SQL or
  // not, stays open for a while (as guard_test's).
  takeover take_over_during(bool guarded) {
    auto db1 = open();
    auto db2 = open();
    const auto name = fresh("takeover");
    const auto ttl = scaled(600ms);
    auto a = make(db1, name, lease(ttl, false));
    auto b = make(db2, name);
    EXPECT_TRUE(a->try_lock());
    const auto rows = held_rows(*a);
    auto tx = app();
    tx->begin();
    if (guarded) guard_all(*tx, rows);
    std::this_thread::sleep_for(ttl + scaled(200ms));  // a's lease ran out, by every clock
    takeover out;
    std::atomic<bool> granted{false};
    std::thread contender([&] {
      try {
        if (b->try_lock_for(scaled(20s))) {
          out.granted_at = clock_type::now();
          granted = true;
          b->release();
        }
      } catch (const std::exception& e) {
        out.error = e.what();
      }
    });
    std::this_thread::sleep_for(scaled(1s));  // a grant takes a few milliseconds once possible
    out.before_commit = granted.load();
    tx->insert(insert_statement(), 1);
    out.committed_at = clock_type::now();
    tx->commit();
    contender.join();
    out.granted = granted.load();
    EXPECT_THROW(a->release(), not_held) << "a's lease ran out";
    EXPECT_EQ(data_rows(), 1);
    return out;
  }

  std::string data_;
};

TEST_P(GuardSqlTest, AGuardedWriteCommitsWhileTheLockIsHeld) {
  auto db = open();
  auto lock = make(db, fresh("guarded"));
  lock->lock();
  auto tx = app();
  tx->begin();
  guard_all(*tx, held_rows(*lock));
  tx->insert(insert_statement(), 1);
  guard_all(*tx, held_rows(*lock));  // a second guard in the same transaction passes too
  tx->insert(insert_statement(), 2);
  tx->commit();
  lock->release();
  EXPECT_EQ(data_rows(), 2);
  if (kind().can.shared) {  // a reader's hold is guarded the same way
    lock->lock_shared();
    tx->begin();
    guard_all(*tx, held_rows(*lock));
    tx->insert(insert_statement(), 3);
    tx->commit();
    lock->release_shared();
    EXPECT_EQ(data_rows(), 3);
  }
}

TEST_P(GuardSqlTest, AGuardOfAForcedReleasedHoldRefusesAndTheWriteIsRolledBack) {
  auto db = open();
  const auto name = fresh("forced");
  auto lock = make(db, name);
  lock->lock();
  const auto rows = held_rows(*lock);
  kind().force_release(open_owner(), name);
  auto tx = app();
  tx->begin();
  tx->insert(insert_statement(), 1);
  const auto g = tx->guard(guard_statement(), rows.front().first, rows.front().second);
  EXPECT_FALSE(g.passed) << "the guard passed although the hold was released by force";
  if (where().dialect != dialect_kind::sqlite) {
    if (!g.sqlstate.empty() || where().dialect == dialect_kind::postgresql) {
      EXPECT_EQ(g.sqlstate, kGuardSqlstate) << g.message;
    }
    if (where().dialect == dialect_kind::mysql) {
      EXPECT_EQ(g.vendor_code, 1644) << g.message;  // ER_SIGNAL_EXCEPTION
    }
    EXPECT_NE(g.message.find("sqllock: lock no longer held, roll the transaction back"), std::string::npos)
        << g.message;
    EXPECT_NE(g.message.find("fence " + std::to_string(rows.front().second)), std::string::npos) << g.message;
  }
  tx->rollback();  // what the script does on the error (SQLite: on no row)
  EXPECT_EQ(data_rows(), 0);
  lock->unlock();
}

// The lease ran out by the database clock and nobody took the lock: the row is still there, with
// this fence, and the guard refuses it all the same.
TEST_P(GuardSqlTest, AGuardOfAnExpiredLeaseRefuses) {
  auto db = open();
  auto lock = make(db, fresh("expired"), lease(scaled(500ms), false));
  ASSERT_TRUE(lock->try_lock());
  const auto [name, fence] = held_rows(*lock).front();
  std::this_thread::sleep_for(scaled(700ms));
  auto tx = app();
  tx->begin();
  const auto g = tx->guard(guard_statement(), name, fence);
  EXPECT_FALSE(g.passed) << "the guard passed on an expired lease";
  tx->rollback();
  lock->unlock();
}

TEST_P(GuardSqlTest, AGuardOfAnotherFenceOrNameRefuses) {
  auto db = open();
  auto lock = make(db, fresh("other"));
  lock->lock();
  const auto [name, fence] = held_rows(*lock).front();
  auto tx = app();
  tx->begin();
  EXPECT_FALSE(tx->guard(guard_statement(), name, fence + 1000).passed) << "a fence the hold does not have";
  if (where().dialect != dialect_kind::postgresql) {  // PostgreSQL: the error ended the transaction
    EXPECT_FALSE(tx->guard(guard_statement(), name + "x", fence).passed) << "another name";
    EXPECT_TRUE(tx->guard(guard_statement(), name, fence).passed) << "the hold itself";
  }
  tx->rollback();
  lock->release();
}

TEST_P(GuardSqlTest, ATakeoverWaitsUntilTheGuardedTransactionCommits) {
  const auto t = take_over_during(true);
  EXPECT_EQ(t.error, "");
  EXPECT_FALSE(t.before_commit) << "granted while the guarded transaction was open";
  ASSERT_TRUE(t.granted) << "never granted after the commit";
  EXPECT_GE(t.granted_at, t.committed_at);
}

// The control: without the guard the other owner is granted while the writing transaction is
// still open, and that write then commits after another's grant.
TEST_P(GuardSqlTest, WithoutAGuardATakeoverIsGrantedWhileTheTransactionIsOpen) {
  const auto t = take_over_during(false);
  EXPECT_EQ(t.error, "");
  EXPECT_TRUE(t.before_commit);
}

SQLLOCK_CONTRACT_CASES(Leased, GuardSqlTest, with(&lock_capabilities::leased, every_target()));

}  // namespace
}  // namespace sqllock::test
