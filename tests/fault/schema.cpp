#include "fault/schema.hpp"

#include <string_view>

#include "sqllock/migrate.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {

using test::sql;

// Microseconds since 1970 of a timestamp column or expression, on each dialect's clock type.
std::string micros(dialect_kind d, std::string_view e) {
  const std::string x(e);
  switch (d) {
    case dialect_kind::postgresql: return "CAST(EXTRACT(EPOCH FROM " + x + ") * 1000000 AS bigint)";
    case dialect_kind::mysql: return "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " + x + ")";
    case dialect_kind::sqlite: return "CAST(ROUND((julianday(" + x + ") - 2440587.5) * 86400000000.0) AS INTEGER)";
  }
  return x;
}

// The database clock as each dialect's lock table stores it.
static std::string_view now_expr(dialect_kind d) {
  switch (d) {
    case dialect_kind::postgresql: return "clock_timestamp()";
    case dialect_kind::mysql: return "UTC_TIMESTAMP(6)";
    case dialect_kind::sqlite: return "strftime('%Y-%m-%d %H:%M:%f', 'now')";
  }
  return "";
}

// The database clock at the moment a trigger runs. MariaDB's UTC_TIMESTAMP() is the statement's
// start (also inside triggers), which may precede a lock wait; SYSDATE() is the real time, so
// add the time elapsed since the start (both in the session's zone) to the UTC start.
std::string_view trigger_now(dialect_kind d) {
  if (d == dialect_kind::mysql)
    return "TIMESTAMPADD(MICROSECOND, TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)), UTC_TIMESTAMP(6))";
  return now_expr(d);
}

namespace {

// DDL of the data table and the grant log. The grant log follows each lock row: an INSERT or an
// UPDATE that changes the fence is a new grant (and, for an UPDATE, the take-over of the old
// one); an UPDATE keeping the fence (renewal, re-entry, release of one level) moves the expiry;
// a DELETE (release, reaper) ends the grant.
//
// granted_at is the acquire statement's clock reading, the one its expiry test used; logged_at
// is when the trigger ran. An acquire that waited for a DELETE to commit read its clock before
// that wait, so ordering a grant after a deleted one needs logged_at (see checker.hpp).
std::vector<std::string> ddl(dialect_kind d) {
  // SQL text laid out by hand: clang-format 14 would break it around each `+`.
  // clang-format off
  const std::string now(trigger_now(d));
  switch (d) {
    case dialect_kind::postgresql:
      return {
          "CREATE TABLE fault_data (k text PRIMARY KEY, v bigint NOT NULL DEFAULT 0,"
          " max_fence bigint NOT NULL DEFAULT 0, u bigint NOT NULL DEFAULT 0, g bigint NOT NULL DEFAULT 0)",
          "CREATE TABLE fault_grants (resource text NOT NULL, fence bigint NOT NULL, owner_token text NOT NULL,"
          " granted_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, taken_over_at timestamptz,"
          " deleted_at timestamptz, logged_at timestamptz NOT NULL, PRIMARY KEY (resource, fence))",
          "CREATE FUNCTION fault_grant_log() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
          " IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.fence <> OLD.fence) THEN"
          "   IF TG_OP = 'UPDATE' THEN"
          "     UPDATE fault_grants SET taken_over_at = NEW.acquired_at WHERE resource = OLD.resource AND fence = OLD.fence;"
          "   END IF;"
          "   INSERT INTO fault_grants (resource, fence, owner_token, granted_at, expires_at, logged_at)"
          "   VALUES (NEW.resource, NEW.fence, NEW.owner_token, NEW.acquired_at, NEW.expires_at, " + now + ");"
          " ELSIF TG_OP = 'UPDATE' THEN"
          "   UPDATE fault_grants SET expires_at = GREATEST(expires_at, NEW.expires_at)"
          "   WHERE resource = NEW.resource AND fence = NEW.fence;"
          " ELSE"
          "   UPDATE fault_grants SET deleted_at = " + now + " WHERE resource = OLD.resource AND fence = OLD.fence;"
          " END IF; RETURN NULL; END $f$",
          "CREATE TRIGGER fault_grant_log AFTER INSERT OR UPDATE OR DELETE ON distributed_lock"
          " FOR EACH ROW EXECUTE FUNCTION fault_grant_log()",
      };
    case dialect_kind::mysql:
      return {
          "CREATE TABLE fault_data (k VARBINARY(64) PRIMARY KEY, v BIGINT NOT NULL DEFAULT 0,"
          " max_fence BIGINT NOT NULL DEFAULT 0, u BIGINT NOT NULL DEFAULT 0, g BIGINT NOT NULL DEFAULT 0)"
          " ENGINE=InnoDB",
          "CREATE TABLE fault_grants (resource VARBINARY(255) NOT NULL, fence BIGINT NOT NULL,"
          " owner_token VARBINARY(255) NOT NULL, granted_at DATETIME(6) NOT NULL, expires_at DATETIME(6) NOT NULL,"
          " taken_over_at DATETIME(6) NULL, deleted_at DATETIME(6) NULL, logged_at DATETIME(6) NOT NULL,"
          " PRIMARY KEY (resource, fence)) ENGINE=InnoDB",
          "CREATE TRIGGER fault_grant_ins AFTER INSERT ON distributed_lock FOR EACH ROW"
          " INSERT INTO fault_grants (resource, fence, owner_token, granted_at, expires_at, logged_at)"
          " VALUES (NEW.resource, NEW.fence, NEW.owner_token, NEW.acquired_at, NEW.expires_at, " + now + ")",
          "CREATE TRIGGER fault_grant_upd AFTER UPDATE ON distributed_lock FOR EACH ROW BEGIN"
          " IF NEW.fence <> OLD.fence THEN"
          "   UPDATE fault_grants SET taken_over_at = NEW.acquired_at WHERE resource = OLD.resource AND fence = OLD.fence;"
          "   INSERT INTO fault_grants (resource, fence, owner_token, granted_at, expires_at, logged_at)"
          "   VALUES (NEW.resource, NEW.fence, NEW.owner_token, NEW.acquired_at, NEW.expires_at, " + now + ");"
          " ELSE"
          "   UPDATE fault_grants SET expires_at = GREATEST(expires_at, NEW.expires_at)"
          "   WHERE resource = NEW.resource AND fence = NEW.fence;"
          " END IF; END",
          "CREATE TRIGGER fault_grant_del AFTER DELETE ON distributed_lock FOR EACH ROW"
          " UPDATE fault_grants SET deleted_at = " + now + " WHERE resource = OLD.resource AND fence = OLD.fence",
      };
    case dialect_kind::sqlite:
      return {
          "CREATE TABLE fault_data (k TEXT PRIMARY KEY, v INTEGER NOT NULL DEFAULT 0,"
          " max_fence INTEGER NOT NULL DEFAULT 0, u INTEGER NOT NULL DEFAULT 0, g INTEGER NOT NULL DEFAULT 0)",
          "CREATE TABLE fault_grants (resource TEXT NOT NULL, fence INTEGER NOT NULL, owner_token TEXT NOT NULL,"
          " granted_at TEXT NOT NULL, expires_at TEXT NOT NULL, taken_over_at TEXT, deleted_at TEXT,"
          " logged_at TEXT NOT NULL, PRIMARY KEY (resource, fence))",
          "CREATE TRIGGER fault_grant_ins AFTER INSERT ON distributed_lock BEGIN"
          " INSERT INTO fault_grants (resource, fence, owner_token, granted_at, expires_at, logged_at)"
          " VALUES (NEW.resource, NEW.fence, NEW.owner_token, NEW.acquired_at, NEW.expires_at, " + now + "); END",
          "CREATE TRIGGER fault_grant_take AFTER UPDATE ON distributed_lock WHEN NEW.fence <> OLD.fence BEGIN"
          " UPDATE fault_grants SET taken_over_at = NEW.acquired_at WHERE resource = OLD.resource AND fence = OLD.fence;"
          " INSERT INTO fault_grants (resource, fence, owner_token, granted_at, expires_at, logged_at)"
          " VALUES (NEW.resource, NEW.fence, NEW.owner_token, NEW.acquired_at, NEW.expires_at, " + now + "); END",
          "CREATE TRIGGER fault_grant_ext AFTER UPDATE ON distributed_lock WHEN NEW.fence = OLD.fence BEGIN"
          " UPDATE fault_grants SET expires_at = max(expires_at, NEW.expires_at)"
          " WHERE resource = NEW.resource AND fence = NEW.fence; END",
          "CREATE TRIGGER fault_grant_del AFTER DELETE ON distributed_lock BEGIN"
          " UPDATE fault_grants SET deleted_at = " + now + " WHERE resource = OLD.resource AND fence = OLD.fence; END",
      };
  }
  return {};
  // clang-format on
}

// DDL of the permit grant log: the same rules as the grant log, per (resource, slot) row of the
// semaphore's permits table (a take-over is an UPDATE of an expired slot's row that changes the
// fence; renewals keep it). Keyed by (resource, slot, fence): the count-then-insert control
// writes rows of slots >= N with fences of its own.
std::vector<std::string> permit_ddl(dialect_kind d) {
  // clang-format off
  const std::string now(trigger_now(d));
  const std::string cols = "(resource, slot, fence, owner_token, granted_at, expires_at, logged_at)";
  const std::string vals =
      " VALUES (NEW.resource, NEW.slot, NEW.fence, NEW.owner_token, NEW.acquired_at, NEW.expires_at, " + now + ")";
  const std::string take = "UPDATE fault_permit_grants SET taken_over_at = NEW.acquired_at"
                           " WHERE resource = OLD.resource AND slot = OLD.slot AND fence = OLD.fence";
  const std::string ins = "INSERT INTO fault_permit_grants " + cols + vals;
  const std::string del = "UPDATE fault_permit_grants SET deleted_at = " + now +
                          " WHERE resource = OLD.resource AND slot = OLD.slot AND fence = OLD.fence";
  const auto extend = [](std::string_view greatest) {
    return "UPDATE fault_permit_grants SET expires_at = " + std::string(greatest) +
           "(expires_at, NEW.expires_at) WHERE resource = NEW.resource AND slot = NEW.slot AND fence = NEW.fence";
  };
  switch (d) {
    case dialect_kind::postgresql:
      return {
          "CREATE TABLE fault_permit_grants (resource text NOT NULL, slot bigint NOT NULL, fence bigint NOT NULL,"
          " owner_token text NOT NULL, granted_at timestamptz NOT NULL, expires_at timestamptz NOT NULL,"
          " taken_over_at timestamptz, deleted_at timestamptz, logged_at timestamptz NOT NULL,"
          " PRIMARY KEY (resource, slot, fence))",
          "CREATE FUNCTION fault_permit_log() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
          " IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.fence <> OLD.fence) THEN"
          "   IF TG_OP = 'UPDATE' THEN " + take + "; END IF; " + ins + ";"
          " ELSIF TG_OP = 'UPDATE' THEN " + extend("GREATEST") + ";"
          " ELSE " + del + "; END IF; RETURN NULL; END $f$",
          "CREATE TRIGGER fault_permit_log AFTER INSERT OR UPDATE OR DELETE ON distributed_lock_permits"
          " FOR EACH ROW EXECUTE FUNCTION fault_permit_log()",
      };
    case dialect_kind::mysql:
      return {
          "CREATE TABLE fault_permit_grants (resource VARBINARY(255) NOT NULL, slot BIGINT NOT NULL, fence BIGINT NOT NULL,"
          " owner_token VARBINARY(255) NOT NULL, granted_at DATETIME(6) NOT NULL, expires_at DATETIME(6) NOT NULL,"
          " taken_over_at DATETIME(6) NULL, deleted_at DATETIME(6) NULL, logged_at DATETIME(6) NOT NULL,"
          " PRIMARY KEY (resource, slot, fence)) ENGINE=InnoDB",
          "CREATE TRIGGER fault_permit_ins AFTER INSERT ON distributed_lock_permits FOR EACH ROW " + ins,
          "CREATE TRIGGER fault_permit_upd AFTER UPDATE ON distributed_lock_permits FOR EACH ROW BEGIN"
          " IF NEW.fence <> OLD.fence THEN " + take + "; " + ins + "; ELSE " + extend("GREATEST") + "; END IF; END",
          "CREATE TRIGGER fault_permit_del AFTER DELETE ON distributed_lock_permits FOR EACH ROW " + del,
      };
    case dialect_kind::sqlite:
      return {
          "CREATE TABLE fault_permit_grants (resource TEXT NOT NULL, slot INTEGER NOT NULL, fence INTEGER NOT NULL,"
          " owner_token TEXT NOT NULL, granted_at TEXT NOT NULL, expires_at TEXT NOT NULL, taken_over_at TEXT,"
          " deleted_at TEXT, logged_at TEXT NOT NULL, PRIMARY KEY (resource, slot, fence))",
          "CREATE TRIGGER fault_permit_ins AFTER INSERT ON distributed_lock_permits BEGIN " + ins + "; END",
          "CREATE TRIGGER fault_permit_take AFTER UPDATE ON distributed_lock_permits WHEN NEW.fence <> OLD.fence BEGIN " +
              take + "; " + ins + "; END",
          "CREATE TRIGGER fault_permit_ext AFTER UPDATE ON distributed_lock_permits WHEN NEW.fence = OLD.fence BEGIN " +
              extend("max") + "; END",
          "CREATE TRIGGER fault_permit_del AFTER DELETE ON distributed_lock_permits BEGIN " + del + "; END",
      };
  }
  return {};
  // clang-format on
}

data_sql make_data_sql(dialect_kind d) {
  const std::string num = d == dialect_kind::postgresql ? "CAST($2 AS bigint)" : "$2";
  return {
      "SELECT u, " + micros(d, now_expr(d)) + ", g FROM fault_data WHERE k = $1",
      "UPDATE fault_data SET v = v + 1, max_fence = " + num + " WHERE k = $1 AND max_fence <= " + num,
      "UPDATE fault_data SET v = v + 1 WHERE k = $1",
      "UPDATE fault_data SET u = " + num + " WHERE k = $1",
  };
}

std::int64_t as_int(const detail::field& f) { return f ? std::stoll(*f) : 0; }
std::optional<std::int64_t> as_opt(const detail::field& f) {
  if (!f) return std::nullopt;
  return std::stoll(*f);
}

}  // namespace

const data_sql& data_statements(dialect_kind d) {
  static const data_sql pg = make_data_sql(dialect_kind::postgresql);
  static const data_sql my = make_data_sql(dialect_kind::mysql);
  static const data_sql lite = make_data_sql(dialect_kind::sqlite);
  return d == dialect_kind::postgresql ? pg : d == dialect_kind::mysql ? my : lite;
}

// append, not "r" + std::to_string(i): GCC 12 -O3 reports a false -Wrestrict in the latter.
std::string resource_name(int i) { return std::string("r").append(std::to_string(i)); }

void create_schema(const database& db, int resources, int slots) {
  database handle = db;  // migrate() takes a handle; copies share the pool
  migrate(handle);
  for (const auto& statement : ddl(db.dialect())) sql(db, statement);
  for (const auto& statement : permit_ddl(db.dialect())) sql(db, statement);
  for (int i = 0; i < resources; ++i) {
    sql(db, "INSERT INTO fault_data (k) VALUES ($1)", {resource_name(i)});
    for (int s = 0; s < slots; ++s) sql(db, "INSERT INTO fault_data (k) VALUES ($1)", {slot_key(resource_name(i), s)});
  }
}

std::string slot_key(const std::string& resource, std::int64_t slot) {
  return std::string(resource).append("/").append(std::to_string(slot));
}

std::vector<grant_row> read_grants(const database& db) {
  const auto d = db.dialect();
  const auto r = sql(db, "SELECT resource, fence, owner_token, " + micros(d, "granted_at") + ", " +
                             micros(d, "expires_at") + ", " + micros(d, "taken_over_at") + ", " +
                             micros(d, "deleted_at") + ", " + micros(d, "logged_at") +
                             " FROM fault_grants ORDER BY resource, logged_at, fence");
  std::vector<grant_row> out;
  for (const auto& row : r.rows) {
    out.push_back({row[0].value_or(""), as_int(row[1]), row[2].value_or(""), as_int(row[3]), as_int(row[4]),
                   as_opt(row[5]), as_opt(row[6]), as_int(row[7]), "", -1});
  }
  return out;
}

std::vector<grant_row> read_permit_grants(const database& db) {
  const auto d = db.dialect();
  const auto r = sql(db, "SELECT resource, slot, fence, owner_token, " + micros(d, "granted_at") + ", " +
                             micros(d, "expires_at") + ", " + micros(d, "taken_over_at") + ", " +
                             micros(d, "deleted_at") + ", " + micros(d, "logged_at") +
                             " FROM fault_permit_grants ORDER BY resource, slot, logged_at, fence");
  std::vector<grant_row> out;
  for (const auto& row : r.rows) {
    const std::int64_t slot = as_int(row[1]);
    out.push_back({slot_key(row[0].value_or(""), slot), as_int(row[2]), row[3].value_or(""), as_int(row[4]),
                   as_int(row[5]), as_opt(row[6]), as_opt(row[7]), as_int(row[8]), row[0].value_or(""), slot});
  }
  return out;
}

std::vector<data_row> read_data(const database& db) {
  const auto r = sql(db, "SELECT k, v, max_fence, u, g FROM fault_data ORDER BY k");
  std::vector<data_row> out;
  for (const auto& row : r.rows)
    out.push_back({row[0].value_or(""), as_int(row[1]), as_int(row[2]), as_int(row[3]), as_int(row[4])});
  return out;
}

}  // namespace sqllock::fault
