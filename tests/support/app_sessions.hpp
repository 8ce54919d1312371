// Application-owned connections driven through sqllock's adapters (libpqxx, SOCI, MySQL
// Connector/C++), for the tests of what joins an application's own transaction: row locks
// (row_lock_adapter_test) and guards (guard_test, and the fault harness's guarded writes,
// fault/guarded_write.hpp). Header-only: each such test links the client
// libraries itself, as an application does.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

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
#include "sqllock/dialect_kind.hpp"
#include "support/test_env.hpp"

namespace sqllock::test {

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
  // guard() of the adapter (sqllock/lease_claim.hpp) in the open transaction (or with none open).
  virtual void guard(const lease_claim& claim) = 0;

  // What a statement returned: its first row's first field as a number, or the server's error.
  struct answer {
    bool row = false;  // a row came back
    std::int64_t first = -1;
    std::string sqlstate;  // "" when the library does not say (SOCI's MySQL backend)
    long long vendor_code = 0;
    std::string error;  // "" when the statement succeeded
  };
  // `statement` in the open transaction with ($1 or :text, $2 or :number, in the library's own
  // placeholder syntax — see placeholder()) bound to `text` and `number`, as an application binds
  // them; a server error is returned, not thrown.
  virtual answer query(const std::string& statement, const std::string& text, std::int64_t number) = 0;
  // An UPDATE … SET <column> = <number> WHERE <key> = <text> in the open transaction, its
  // placeholders as query()'s: placeholder(2) for the number, placeholder(1) for the text — bound
  // by position with Connector/C++'s ?, so there the number's comes first, as SET precedes WHERE.
  // Throws what the client library throws.
  virtual void update_where(const std::string& statement, std::int64_t number, const std::string& text) = 0;
  // Placeholder n (1: the text, 2: the number) in this library's syntax: $n (libpqxx), :text and
  // :number (SOCI), ? (Connector/C++).
  virtual std::string placeholder(int n) const = 0;
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
  void guard(const lease_claim& claim) override {
    if (tx_) return sqllock::guard(*tx_, claim);
    pqxx::nontransaction n(conn_);
    sqllock::guard(n, claim);
  }
  answer query(const std::string& statement, const std::string& text, std::int64_t number) override {
    answer out;
    try {
      const auto r = tx_->exec_params(statement, text, number);
      out.row = !r.empty();
      if (out.row) out.first = r.at(0).at(0).as<std::int64_t>();
    } catch (const pqxx::sql_error& e) {
      out.sqlstate = e.sqlstate();
      out.error = e.what();
    }
    return out;
  }
  void update_where(const std::string& statement, std::int64_t number, const std::string& text) override {
    tx_->exec_params(statement, text, number);
  }
  std::string placeholder(int n) const override { return "$" + std::to_string(n); }

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
  void guard(const lease_claim& claim) override { sqllock::guard(session_, claim); }
  answer query(const std::string& statement, const std::string& text, std::int64_t number) override {
    answer out;
    long long got = -1;
    long long bound = number;
    soci::indicator ind = soci::i_null;
    try {
      // A one-time query: no named prepared statement left on a server connection PgBouncer shares.
      session_ << statement, soci::use(text, "text"), soci::use(bound, "number"), soci::into(got, ind);
      out.row = session_.got_data() && ind == soci::i_ok;
      out.first = got;
    } catch (const soci::postgresql_soci_error& e) {
      out.sqlstate = e.sqlstate();
      out.error = e.what();
    } catch (const soci::mysql_soci_error& e) {
      out.vendor_code = e.err_num_;
      out.error = e.what();
    }
    return out;
  }
  void update_where(const std::string& statement, std::int64_t number, const std::string& text) override {
    long long bound = number;
    session_ << statement, soci::use(text, "text"), soci::use(bound, "number");  // one-time, as query()
  }
  std::string placeholder(int n) const override { return n == 1 ? ":text" : ":number"; }

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
  // COMMIT as a statement: Connector/C++ 1.1's Connection::commit() returns normally when the
  // server lost the transaction (restarted between its last statement and the commit), where the
  // statement throws "Lost connection to server during query" (measured on MariaDB 10.11; it made
  // the fault harness count lost guarded writes as committed: docs/reliability.md, Findings).
  void commit() override {
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    st->execute("COMMIT");
  }
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
  void guard(const lease_claim& claim) override { sqllock::guard(conn_.get(), claim); }
  answer query(const std::string& statement, const std::string& text, std::int64_t number) override {
    answer out;
    try {
      std::unique_ptr<sql::PreparedStatement> st(conn_->prepareStatement(statement));
      st->setString(1, text);
      st->setInt64(2, number);
      std::unique_ptr<sql::ResultSet> rs(st->executeQuery());
      out.row = rs->next();
      if (out.row) out.first = rs->getInt64(1);
    } catch (const sql::SQLException& e) {
      out.sqlstate = e.getSQLState();
      out.vendor_code = e.getErrorCode();
      out.error = e.what();
    }
    return out;
  }
  void update_where(const std::string& statement, std::int64_t number, const std::string& text) override {
    std::unique_ptr<sql::PreparedStatement> st(conn_->prepareStatement(statement));
    st->setInt64(1, number);
    st->setString(2, text);
    st->executeUpdate();
  }
  std::string placeholder(int) const override { return "?"; }

 private:
  std::unique_ptr<sql::Connection> conn_;
};

// SOCI's mysql connect string for a mysql:// test URI.
inline std::string soci_mysql_connect(const detail::connection_spec& spec) {
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
inline void PrintTo(const adapter_target& t, std::ostream* os) { *os << t.name; }

inline std::vector<adapter_target> adapter_targets() {
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

// A new application connection to `uri` through the adapter that matches `name`, a target name of
// adapter_targets() or of test_env.hpp's all_targets() and pgbouncer_targets(): libpqxx for
// pqxx_* and pgbouncer_pqxx, SOCI for soci_* and pgbouncer_soci, Connector/C++ for the others.
inline std::unique_ptr<app_session> connect_app(const std::string& name, const std::string& uri) {
  using namespace std::chrono_literals;
  const auto spec = detail::parse_uri(uri);
  if (name.starts_with("pqxx_") || name == "pgbouncer_pqxx") return std::make_unique<pqxx_session>(spec.native_uri);
  if (name == "soci_postgresql" || name == "pgbouncer_soci")
    return std::make_unique<soci_app_session>(soci::postgresql,
                                              detail::libpq_uri_with_connect_timeout(spec.native_uri, 5s));
  if (name == "soci_mysql") return std::make_unique<soci_app_session>(soci::mysql, soci_mysql_connect(spec));
  if (name == "soci_sqlite")
    return std::make_unique<soci_app_session>(soci::sqlite3, "db=\"" + spec.path + "\" timeout=10");
  return std::make_unique<cppconn_session>(spec);
}

}  // namespace sqllock::test
