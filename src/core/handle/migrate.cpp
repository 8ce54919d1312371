// Applies the embedded migrations (see include/sqllock/migrate.hpp for the contract).
#include "sqllock/migrate.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

#include "core/handle/database_impl.hpp"
#include "core/handle/embedded_migrations.hpp"
#include "core/handle/transaction.hpp"
#include "core/wait/wait_bounds.hpp"
#include "common/sha256.hpp"
#include "common/sql_text.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace {

using detail::connection;
using detail::value;

std::string_view dir_name(dialect_kind dialect) {
  switch (dialect) {
    case dialect_kind::postgresql: return "postgresql";
    case dialect_kind::mysql: return "mysql";
    case dialect_kind::sqlite: return "sqlite3";
  }
  return "";
}

std::vector<detail::embedded_migration> shipped(dialect_kind dialect) {
  std::vector<detail::embedded_migration> out;
  for (const auto& m : detail::embedded_migrations())
    if (m.dialect == dir_name(dialect)) out.push_back(m);
  return out;  // generated in version order
}

struct applied_migration {
  int version;
  std::string name;
  std::string checksum;
};

int to_int(const detail::field& f) {
  int v = 0;
  if (!f || std::from_chars(f->data(), f->data() + f->size(), v).ec != std::errc())
    throw schema_error("sqllock_schema_migrations holds a malformed version");
  return v;
}

std::vector<applied_migration> read_history(connection& conn, const detail::dialect_sql& sql,
                                            const std::string& table) {
  const value params[] = {table};
  std::vector<applied_migration> out;
  for (const auto& r : conn.exec(sql.select_history, params).rows)
    out.push_back({to_int(r.at(0)), r.at(1).value_or(""), r.at(2).value_or("")});
  return out;
}

// Refuses a history this library cannot continue: an edited migration or a newer schema.
void check_history(const std::vector<applied_migration>& applied, const std::vector<detail::embedded_migration>& known,
                   const std::string& table) {
  const int newest_known = known.empty() ? 0 : known.back().version;
  for (const auto& a : applied) {
    if (a.version > newest_known) {
      throw schema_error("lock table '" + table + "' has schema version " + std::to_string(a.version) +
                         " but this sqllock knows only up to " + std::to_string(newest_known) +
                         "; upgrade sqllock (a newer release migrated this database)");
    }
    const auto it = std::find_if(known.begin(), known.end(), [&](const auto& k) { return k.version == a.version; });
    if (it != known.end() && detail::sha256_hex(it->text) != a.checksum) {
      throw schema_error("migration " + std::to_string(a.version) + " (" + a.name + ") of lock table '" + table +
                         "' was applied with checksum " + a.checksum + " but this sqllock ships " +
                         detail::sha256_hex(it->text) +
                         "; a shipped migration was edited after it ran. Restore the original "
                         "migration file or repair the database by hand");
    }
  }
}

void apply(connection& conn, const detail::dialect_sql& sql, const detail::embedded_migration& m,
           const std::string& table, bool own_transaction) {
  std::optional<detail::transaction> tx;  // rolled back (quietly) if a statement fails
  if (own_transaction) tx.emplace(conn, sql);
  for (const auto& statement : detail::split_sql_script(m.text))
    conn.exec_direct(detail::expand_table_template(statement, sql.kind, table));
  const value params[] = {table, std::int64_t{m.version}, std::string(m.name), detail::sha256_hex(m.text)};
  conn.exec(sql.insert_history, params);
  if (tx) {
    tx->commit("the connection broke during the COMMIT of migration " + std::to_string(m.version) +
               ": whether it was applied is unknown; run migrate again, which checks");
  }
}

// Holds the dialect's migration lock on one connection for the duration of a migrate() call.
class migration_lock {
 public:
  migration_lock(connection& conn, const detail::dialect_sql& sql, const std::string& table) : conn_(conn), sql_(sql) {
    if (sql.migration_lock_is_transaction) {
      conn.exec_direct(sql.migration_lock);
    } else {
      const auto r = conn.exec_direct(sql.migration_lock);
      if (r.rows.empty() || r.rows[0].empty() || r.rows[0][0] != std::optional<std::string>("1"))
        throw connection_error("timed out waiting for another process's migration in this database (of '" + table +
                               "' or another lock table) to finish; retry when it has");
    }
  }
  // Ends the lock; for SQLite, commits everything done under it.
  void finish() {
    finished_ = true;
    conn_.exec_direct(sql_.migration_unlock);
  }
  // On an error path: the session ends the lock anyway when the connection closes.
  ~migration_lock() {
    if (!finished_)
      detail::exec_quietly(conn_, sql_.migration_lock_is_transaction ? sql_.rollback : sql_.migration_unlock);
  }
  migration_lock(const migration_lock&) = delete;
  migration_lock& operator=(const migration_lock&) = delete;

 private:
  connection& conn_;
  const detail::dialect_sql& sql_;
  bool finished_ = false;
};

}  // namespace

std::vector<migration_info> known_migrations(dialect_kind dialect) {
  std::vector<migration_info> out;
  for (const auto& m : shipped(dialect)) out.push_back({m.version, std::string(m.name), detail::sha256_hex(m.text)});
  return out;
}

namespace {

// True when the history already records every shipped migration (and passes check_history), read
// without DDL or the migration lock — so an application may call migrate() at every start, even
// with a role that may only read and write the tables. False when anything is missing or the
// history cannot be read (no table yet, or no privilege): the locked path decides and reports.
bool already_current(connection& conn, const detail::dialect_sql& sql, const std::string& table,
                     const std::vector<detail::embedded_migration>& known) {
  std::vector<applied_migration> applied;
  try {
    applied = read_history(conn, sql, table);
  } catch (const backend_error&) {
    return false;
  }
  check_history(applied, known, table);
  return std::all_of(known.begin(), known.end(), [&](const auto& m) {
    return std::any_of(applied.begin(), applied.end(), [&](const auto& a) { return a.version == m.version; });
  });
}

// migrate() without its translation of permission errors.
migrate_result migrate_locked(const database& db) {
  auto& impl = detail::database_access::impl(db);
  const auto& sql = impl.sql();
  const auto& table = db.table();
  const auto known = shipped(db.dialect());
  // DDL may wait long for the tables' locks, and the migration lock for another migrator: no bound.
  const detail::unbounded_statements_scope ddl;

  auto conn = impl.borrow();
  migrate_result result;
  result.version = known.empty() ? 0 : known.back().version;
  if (already_current(*conn, sql, table, known)) return result;

  migration_lock lock(*conn, sql, table);
  conn->exec_direct(sql.create_history);
  const auto applied = read_history(*conn, sql, table);
  check_history(applied, known, table);

  for (const auto& m : known) {
    const bool done = std::any_of(applied.begin(), applied.end(),
                                  [&](const auto& a) { return a.version == m.version; });
    if (done) continue;
    apply(*conn, sql, m, table, sql.transactional_ddl && !sql.migration_lock_is_transaction);
    result.applied.push_back(m.version);
  }
  lock.finish();
  return result;
}

}  // namespace

migrate_result migrate(const database& db) {
  try {
    return migrate_locked(db);
  } catch (const permission_denied& e) {
    // MySQL/MariaDB with binary logging on: creating a trigger (schema 1, 5) or the SQL guard's
    // function (schema 6) needs SUPER unless the server trusts routine creators. The owner's
    // rights do not help; say what does. The migrations done so far stay (MySQL DDL commits).
    if (db.dialect() == dialect_kind::mysql && e.vendor_code() == 1419) {  // ER_BINLOG_CREATE_ROUTINE_NEED_SUPER
      throw permission_denied("migrating lock table '" + db.table() + "' creates triggers and a stored function (" +
                                  db.table() +
                                  "_guard, the SQL guard), and with binary logging on MySQL/MariaDB lets only an "
                                  "account with SUPER create them: set log_bin_trust_function_creators = 1 on the "
                                  "server (SET GLOBAL, and in its configuration to survive a restart) or migrate "
                                  "as an account with SUPER, then run `sqllock migrate` again; it resumes where "
                                  "it stopped. " +
                                  e.what(),
                              e.sqlstate(), e.vendor_code());
    }
    // The usual cause: migrating with the application's least-privilege role. Say so first.
    throw permission_denied("migrating lock table '" + db.table() +
                                "' needs a role that may create and alter tables, such as their owner, and this "
                                "one may not: run `sqllock migrate` (or sqllock::migrate) as the owner; the "
                                "application's role needs only SELECT, INSERT, UPDATE and DELETE. " +
                                e.what(),
                            e.sqlstate(), e.vendor_code());
  }
}

int schema_version(const database& db) {
  auto& impl = detail::database_access::impl(db);
  auto conn = impl.borrow();
  try {
    const auto applied = read_history(*conn, impl.sql(), db.table());
    return applied.empty() ? 0 : applied.back().version;
  } catch (const backend_error& e) {
    if (detail::classify(db.dialect(), e) == detail::error_kind::undefined_table) return 0;
    throw;
  }
}

}  // namespace sqllock
