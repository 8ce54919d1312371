// Issue 25: what a guard costs (sqllock/lease_claim.hpp). Each thread holds its own table_lock and
// runs, over and over, one transaction of the application's own through its client library's
// adapter: BEGIN, UPDATE its own row of a data table, COMMIT — with guard(tx, lock) as the
// transaction's first statement (sqllock.guard.<db>.tx_t<n>) and without it (raw.guard.<db>.tx_t<n>,
// the same transaction as an application writes it today). PostgreSQL through libpqxx, MariaDB
// through Connector/C++, SQLite through SOCI; the two alternate in the report's table.
#if defined(SQLLOCK_HAVE_PQXX) && defined(SQLLOCK_HAVE_MYSQL) && defined(SQLLOCK_HAVE_SOCI)
#include <pqxx/pqxx>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include "common/uri.hpp"
#include "driver/mysql/cppconn.hpp"
#include "sqllock/adapters/mysql.hpp"
#include "sqllock/adapters/pqxx.hpp"
#include "sqllock/adapters/soci.hpp"
#include "sqllock/table_lock.hpp"
#include "support/databases.hpp"
#include "support/harness.hpp"
#include "support/lockers.hpp"

namespace sqllock::bench {
namespace {

using d = dialect_kind;
constexpr char kData[] = "bench_guard_data";

// One thread's application connection: a transaction that bumps row `id`, guarded by `lock` or not.
class app_writer {
 public:
  virtual ~app_writer() = default;
  virtual void write(int id, const table_lock* lock) = 0;
};

class pqxx_writer final : public app_writer {
 public:
  explicit pqxx_writer(const std::string& uri) : conn_(detail::parse_uri(uri).native_uri) {
    conn_.prepare("bump", std::string("UPDATE ") + kData + " SET v = v + 1 WHERE id = $1");
  }
  void write(int id, const table_lock* lock) override {
    pqxx::work tx(conn_);
    if (lock) guard(tx, *lock);
    tx.exec_prepared("bump", id);
    tx.commit();
  }

 private:
  pqxx::connection conn_;
};

class cppconn_writer final : public app_writer {
 public:
  explicit cppconn_writer(const std::string& uri) {
    const auto spec = detail::parse_uri(uri);
    conn_.reset(sql::mysql::get_mysql_driver_instance()->connect(
        "tcp://" + spec.host + ":" + std::to_string(spec.port.value_or(3306)), spec.user, spec.password));
    conn_->setSchema(spec.database);
    conn_->setAutoCommit(false);
    bump_.reset(conn_->prepareStatement(std::string("UPDATE ") + kData + " SET v = v + 1 WHERE id = ?"));
  }
  void write(int id, const table_lock* lock) override {
    if (lock) guard(conn_.get(), *lock);
    bump_->setInt(1, id);
    bump_->executeUpdate();
    conn_->commit();
  }

 private:
  std::unique_ptr<sql::Connection> conn_;
  std::unique_ptr<sql::PreparedStatement> bump_;
};

class sqlite_writer final : public app_writer {
 public:
  explicit sqlite_writer(const std::string& uri)
      : session_(*soci::factory_sqlite3(), "db=\"" + detail::parse_uri(uri).path + "\" timeout=10"), bump_(session_) {
    session_ << "PRAGMA synchronous = NORMAL";  // as sqllock's own SQLite sessions
    bump_.exchange(soci::use(id_));
    bump_.alloc();
    bump_.prepare(std::string("UPDATE ") + kData + " SET v = v + 1 WHERE id = :id");
    bump_.define_and_bind();
  }
  void write(int id, const table_lock* lock) override {
    soci::transaction tx(session_);
    if (lock) guard(session_, *lock);
    id_ = id;
    bump_.execute(true);
    tx.commit();
  }

 private:
  soci::session session_;
  int id_ = 0;
  soci::statement bump_;
};

void guarded_writes(benchmark::State& state, dialect_kind dialect, int threads, bool guarded) {
  const database db = open_target(dialect, "distributed_lock", static_cast<std::size_t>(threads) + 2);
  run_sql(db, std::string("DROP TABLE IF EXISTS ") + kData);
  run_sql(db, std::string("CREATE TABLE ") + kData + " (id INTEGER PRIMARY KEY, v BIGINT NOT NULL)");
  std::vector<std::unique_ptr<table_lock>> locks;
  std::vector<std::unique_ptr<app_writer>> writers;
  const std::string uri = *target_uri(dialect);
  for (int t = 0; t < threads; ++t) {
    run_sql(db, std::string("INSERT INTO ") + kData + " (id, v) VALUES ($1, 0)", {std::int64_t{t}});
    // An owner key: the cycle threads guard (claim) what this thread locked.
    table_lock_options o;
    o.owner = "bench-guard-" + std::to_string(t);
    locks.push_back(std::make_unique<table_lock>(db, "bench-guard-" + std::to_string(t), o));
    locks.back()->lock();
    if (dialect == d::postgresql)
      writers.push_back(std::make_unique<pqxx_writer>(uri));
    else if (dialect == d::mysql)
      writers.push_back(std::make_unique<cppconn_writer>(uri));
    else
      writers.push_back(std::make_unique<sqlite_writer>(uri));
  }
  run_and_report(state, threads, [&](int t) {
    const auto i = static_cast<std::size_t>(t);
    writers[i]->write(t, guarded ? locks[i].get() : nullptr);
  });
  for (auto& l : locks) l->release();
}

[[maybe_unused]] const bool registered = [] {
  for (const auto db : {d::postgresql, d::mysql, d::sqlite}) {
    for (const int threads : {1, 8}) {
      const std::string suffix = "." + short_name(db) + ".tx_t" + std::to_string(threads);
      add_case("sqllock.guard" + suffix, [db, threads](benchmark::State& s) { guarded_writes(s, db, threads, true); });
      add_case("raw.guard" + suffix, [db, threads](benchmark::State& s) { guarded_writes(s, db, threads, false); });
    }
  }
  return true;
}();

}  // namespace
}  // namespace sqllock::bench
#endif
