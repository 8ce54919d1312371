// PostgreSQL advisory-lock and MySQL GET_LOCK statements. CAST(… AS …) rather than '::', so the
// text survives SOCI's ':name' placeholder parsing.
#include "dialect/session_lock_sql.hpp"

#include <algorithm>

#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

constexpr const char* kKeyArgs[2] = {"CAST($1 AS bigint)", "CAST($1 AS integer), CAST($2 AS integer)"};
// The parameter after the key: the connection's session tag; after it, a waiting statement's bound.
constexpr const char* kTagArg[2] = {"$2", "$3"};
constexpr const char* kBoundArg[2] = {"$3", "$4"};
// The server session's tag ('' when none was set), kept in a custom setting for the session.
constexpr const char* kSessionTag = "COALESCE(current_setting('sqllock.session', true), '')";

// pg_<prefix>advisory_<infix>lock[_shared](key…)
std::string call(const std::string& prefix, const std::string& infix, int kind, int mode) {
  return "pg_" + prefix + "advisory_" + infix + (mode == 1 ? "_shared(" : "(") + kKeyArgs[kind] + ")";
}

// The key as pg_locks shows it: classid, objid (as bigint) and objsubid.
constexpr const char* kKeyInPgLocks[2] = {
    "CAST(classid AS bigint) = ((CAST($1 AS bigint) >> 32) & 4294967295)"
    " AND CAST(objid AS bigint) = (CAST($1 AS bigint) & 4294967295) AND objsubid = 1",
    "CAST(classid AS bigint) = (CAST($1 AS bigint) & 4294967295)"
    " AND CAST(objid AS bigint) = (CAST($2 AS bigint) & 4294967295) AND objsubid = 2"};

// `action` (text), unless the server session carries another connection's tag and holds an
// advisory lock on this key — which would grant the key again, as a re-entry of that
// connection's lock: then NULL, without acting. claim: also tags the server session as the
// caller's (for the session). bounded: also sets lock_timeout to the parameter after the tag
// (milliseconds, 0: no limit) for this statement's own transaction — the statement that waits
// carries its bound, and nothing is left to reset. CASE evaluates its branches in order, so the
// lock function runs only after the checks and settings, and pg_locks is read only on a server
// session tagged by another connection (never when connected directly).
std::string guarded(const std::string& action, int kind, bool claim, bool bounded = false) {
  std::string out = "SELECT CASE WHEN (CASE WHEN ";
  out += kSessionTag;
  out += " IN ('', CAST(";
  out += kTagArg[kind];
  out +=
      " AS text)) THEN false ELSE EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'"
      " AND pid = pg_backend_pid() AND ";
  out += kKeyInPgLocks[kind];
  out += ") END) THEN NULL";
  if (claim) {
    out += " WHEN set_config('sqllock.session', CAST(";
    out += kTagArg[kind];
    out += " AS text), false) IS NULL THEN NULL";
  }
  if (bounded) {
    out += " WHEN set_config('lock_timeout', CAST(";
    out += kBoundArg[kind];
    out += " AS text) || 'ms', true) IS NULL THEN NULL";
  }
  out += " ELSE ";
  out += action;
  out += " END";
  return out;
}

advisory_sql make_advisory_sql() {
  advisory_sql s;
  for (int kind = 0; kind < 2; ++kind) {
    for (int mode = 0; mode < 2; ++mode) {
      s.try_lock[kind][mode] = guarded("CAST(" + call("try_", "lock", kind, mode) + " AS text)", kind, true);
      s.try_xact_lock[kind][mode] = guarded("CAST(" + call("try_", "xact_lock", kind, mode) + " AS text)", kind, false);
      // The lock functions return void, which reads as '' once cast to text.
      s.lock[kind][mode] = guarded("CAST(" + call("", "lock", kind, mode) + " AS text)", kind, true, true);
      s.xact_lock[kind][mode] = guarded("CAST(" + call("", "xact_lock", kind, mode) + " AS text)", kind, false);
      // Releasing needs the caller's own tag: '' is another session, where the lock is not.
      s.unlock[kind][mode] = "SELECT CASE WHEN " + std::string(kSessionTag) + " <> CAST(" + kTagArg[kind] +
                             " AS text) THEN NULL ELSE CAST(" + call("", "unlock", kind, mode) + " AS text) END";
    }
  }
  s.session_is_mine = "SELECT " + std::string(kSessionTag) + " = CAST($1 AS text)";
  // pg_locks shows a bigint key as (high half, low half, 1) and two integer keys as (first,
  // second, 2); advisory locks are per database, so the database column must match too.
  s.held =
      "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted"
      " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
      " AND CAST(classid AS bigint) = CAST($1 AS bigint) AND CAST(objid AS bigint) = CAST($2 AS bigint)"
      " AND objsubid = CAST($3 AS integer) AND mode = CAST($4 AS text)";
  s.session_lock_wait = postgresql_lock_wait(false);
  s.xact_lock_wait = postgresql_lock_wait(true);
  s.unlock_all = "SELECT pg_advisory_unlock_all()";
  s.savepoint = make_savepoint_sql("sqllock_advisory");
  return s;
}

named_lock_sql make_named_lock_sql() {
  named_lock_sql s;
  s.get_lock = "SELECT GET_LOCK($1, $2)";
  s.release_lock = "SELECT RELEASE_LOCK($1)";
  s.release_all = "SELECT RELEASE_ALL_LOCKS()";
  s.held = "SELECT COALESCE(IS_USED_LOCK($1) = CONNECTION_ID(), 0)";
  return s;
}

}  // namespace

const advisory_sql& advisory_statements(dialect_kind kind) {
  static const advisory_sql statements = make_advisory_sql();
  switch (kind) {
    case dialect_kind::postgresql: return statements;
    case dialect_kind::mysql:
      throw not_supported(
          "advisory locks (sqllock::advisory_lock) need PostgreSQL; on MySQL/MariaDB use "
          "sqllock::named_lock (GET_LOCK) or sqllock::table_lock");
    case dialect_kind::sqlite: break;
  }
  throw not_supported("advisory locks (sqllock::advisory_lock) need PostgreSQL; on SQLite use sqllock::table_lock");
}

const named_lock_sql& named_lock_statements(dialect_kind kind) {
  static const named_lock_sql statements = make_named_lock_sql();
  switch (kind) {
    case dialect_kind::mysql: return statements;
    case dialect_kind::postgresql:
      throw not_supported(
          "named locks (sqllock::named_lock, GET_LOCK) need MySQL or MariaDB; on PostgreSQL use "
          "sqllock::advisory_lock or sqllock::table_lock");
    case dialect_kind::sqlite: break;
  }
  throw not_supported(
      "named locks (sqllock::named_lock, GET_LOCK) need MySQL or MariaDB; on SQLite use "
      "sqllock::table_lock");
}

const std::vector<std::string>& session_reset_statements(dialect_kind kind) {
  // ROLLBACK outside a transaction is only a warning on both servers.
  static const std::vector<std::string> postgresql = {"ROLLBACK", "SELECT pg_advisory_unlock_all()",
                                                      "RESET lock_timeout"};
  static const std::vector<std::string> mysql = {"ROLLBACK", "SELECT RELEASE_ALL_LOCKS()"};
  static const std::vector<std::string> none;
  switch (kind) {
    case dialect_kind::postgresql: return postgresql;
    case dialect_kind::mysql: return mysql;
    case dialect_kind::sqlite: break;
  }
  return none;
}

std::optional<dead_peer_limit_sql> dead_peer_limit_statements(const connection_spec& spec, std::chrono::seconds limit) {
  const std::int64_t seconds = std::max<std::int64_t>(1, limit.count());
  switch (spec.dialect) {
    case dialect_kind::postgresql: {
      if (!spec.prepare_statements) return std::nullopt;  // a transaction-mode pooler
      constexpr std::int64_t interval = 1, count = 3;
      return dead_peer_limit_sql{
          "SELECT set_config('tcp_keepalives_idle', CAST($1 AS text), false),"
          " set_config('tcp_keepalives_interval', CAST($2 AS text), false),"
          " set_config('tcp_keepalives_count', CAST($3 AS text), false),"
          " set_config('tcp_user_timeout', CAST($4 AS text), false)",
          {std::max<std::int64_t>(1, seconds - interval * count), interval, count, seconds * 1000},
          ""};
    }
    case dialect_kind::mysql:
      return dead_peer_limit_sql{
          "SET SESSION wait_timeout = $1", {seconds}, "SET SESSION wait_timeout = @@GLOBAL.wait_timeout"};
    case dialect_kind::sqlite: break;
  }
  return std::nullopt;
}

const std::string& keepalive_statement(dialect_kind) {
  static const std::string ping = "SELECT 1";
  return ping;
}

}  // namespace sqllock::detail
