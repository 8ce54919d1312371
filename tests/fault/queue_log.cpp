#include "fault/queue_log.hpp"

#include "fault/schema.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {
namespace {

using test::sql;

constexpr const char* kCols =
    "(resource, kind, ticket, owner_token, holder_pid, writer, lease_ms, enqueued_at, expires_at, logged_at)";

std::vector<std::string> queue_log_ddl(dialect_kind d) {
  // SQL text laid out by hand: clang-format 14 would break it around each `+`.
  // clang-format off
  const std::string now(trigger_now(d));
  const std::string start = std::string("INSERT INTO fault_queue_log ") + kCols +
                            " VALUES (NEW.resource, NEW.kind, NEW.ticket, NEW.owner_token, NEW.holder_pid,"
                            " CASE WHEN NEW.write_count > 0 THEN 1 ELSE 0 END, NEW.lease_ms, NEW.enqueued_at,"
                            " NEW.expires_at, " + now + ")";
  const std::string old_key = " WHERE resource = OLD.resource AND kind = OLD.kind AND ticket = OLD.ticket";
  const std::string replaced = "UPDATE fault_queue_log SET ended_at = " + now + ", end_event = 'R'" + old_key;
  const std::string deleted = "UPDATE fault_queue_log SET ended_at = " + now + ", end_event = 'D'" + old_key;
  const auto kept = [&](std::string_view greatest) {
    return "UPDATE fault_queue_log SET expires_at = " + std::string(greatest) +
           "(expires_at, NEW.expires_at), reader_at = CASE WHEN reader_at IS NULL AND OLD.write_count > 0"
           " AND NEW.write_count = 0 THEN " + now + " ELSE reader_at END" + old_key;
  };
  switch (d) {
    case dialect_kind::postgresql:
      return {
          "CREATE TABLE fault_queue_log (resource text NOT NULL, kind text NOT NULL, ticket bigint NOT NULL,"
          " owner_token text NOT NULL, holder_pid bigint NOT NULL, writer integer NOT NULL, lease_ms bigint NOT NULL,"
          " enqueued_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, reader_at timestamptz,"
          " ended_at timestamptz, end_event text, logged_at timestamptz NOT NULL, PRIMARY KEY (resource, kind, ticket))",
          "CREATE FUNCTION fault_queue_log() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
          " IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.ticket <> OLD.ticket) THEN"
          "   IF TG_OP = 'UPDATE' THEN " + replaced + "; END IF; " + start + ";"
          " ELSIF TG_OP = 'UPDATE' THEN " + kept("GREATEST") + ";"
          " ELSE " + deleted + "; END IF; RETURN NULL; END $f$",
          "CREATE TRIGGER fault_queue_log AFTER INSERT OR UPDATE OR DELETE ON distributed_lock_queue"
          " FOR EACH ROW EXECUTE FUNCTION fault_queue_log()",
      };
    case dialect_kind::mysql:
      return {
          "CREATE TABLE fault_queue_log (resource VARBINARY(255) NOT NULL, kind CHAR(1) CHARACTER SET ascii NOT NULL,"
          " ticket BIGINT NOT NULL, owner_token VARBINARY(255) NOT NULL, holder_pid BIGINT NOT NULL, writer INT NOT NULL,"
          " lease_ms BIGINT NOT NULL, enqueued_at DATETIME(6) NOT NULL, expires_at DATETIME(6) NOT NULL,"
          " reader_at DATETIME(6) NULL, ended_at DATETIME(6) NULL, end_event CHAR(1) NULL, logged_at DATETIME(6) NOT NULL,"
          " PRIMARY KEY (resource, kind, ticket)) ENGINE=InnoDB",
          "CREATE TRIGGER fault_queue_ins AFTER INSERT ON distributed_lock_queue FOR EACH ROW " + start,
          "CREATE TRIGGER fault_queue_upd AFTER UPDATE ON distributed_lock_queue FOR EACH ROW BEGIN"
          " IF NEW.ticket <> OLD.ticket THEN " + replaced + "; " + start + "; ELSE " + kept("GREATEST") + "; END IF; END",
          "CREATE TRIGGER fault_queue_del AFTER DELETE ON distributed_lock_queue FOR EACH ROW " + deleted,
      };
    case dialect_kind::sqlite:
      return {
          "CREATE TABLE fault_queue_log (resource TEXT NOT NULL, kind TEXT NOT NULL, ticket INTEGER NOT NULL,"
          " owner_token TEXT NOT NULL, holder_pid INTEGER NOT NULL, writer INTEGER NOT NULL, lease_ms INTEGER NOT NULL,"
          " enqueued_at TEXT NOT NULL, expires_at TEXT NOT NULL, reader_at TEXT, ended_at TEXT, end_event TEXT,"
          " logged_at TEXT NOT NULL, PRIMARY KEY (resource, kind, ticket))",
          "CREATE TRIGGER fault_queue_ins AFTER INSERT ON distributed_lock_queue BEGIN " + start + "; END",
          "CREATE TRIGGER fault_queue_take AFTER UPDATE ON distributed_lock_queue WHEN NEW.ticket <> OLD.ticket BEGIN " +
              replaced + "; " + start + "; END",
          "CREATE TRIGGER fault_queue_ext AFTER UPDATE ON distributed_lock_queue WHEN NEW.ticket = OLD.ticket BEGIN " +
              kept("max") + "; END",
          "CREATE TRIGGER fault_queue_del AFTER DELETE ON distributed_lock_queue BEGIN " + deleted + "; END",
      };
  }
  return {};
  // clang-format on
}

}  // namespace

void create_queue_log(const database& db) {
  for (const auto& statement : queue_log_ddl(db.dialect())) sql(db, statement);
}

std::vector<queue_log_row> read_queue_log(const database& db) {
  const auto d = db.dialect();
  const auto r = sql(db, "SELECT resource, kind, ticket, owner_token, holder_pid, writer, lease_ms, " +
                             micros(d, "enqueued_at") + ", " + micros(d, "expires_at") + ", " + micros(d, "reader_at") +
                             ", " + micros(d, "ended_at") + ", end_event, " + micros(d, "logged_at") +
                             " FROM fault_queue_log ORDER BY resource, kind, ticket");
  const auto num = [](const detail::field& f) -> std::int64_t { return f ? std::stoll(*f) : 0; };
  const auto opt = [](const detail::field& f) -> std::optional<std::int64_t> {
    if (!f) return std::nullopt;
    return std::stoll(*f);
  };
  const auto letter = [](const detail::field& f, char none) { return f && !f->empty() ? f->front() : none; };
  std::vector<queue_log_row> out;
  for (const auto& row : r.rows) {
    queue_log_row q;
    q.resource = row[0].value_or("");
    q.kind = letter(row[1], '?');
    q.ticket = num(row[2]);
    q.owner = row[3].value_or("");
    q.pid = num(row[4]);
    q.writer = num(row[5]) != 0;
    q.lease_ms = num(row[6]);
    q.enqueued_us = num(row[7]);
    q.expires_us = num(row[8]);
    q.reader_us = opt(row[9]);
    q.ended_us = opt(row[10]);
    q.end_event = letter(row[11], '-');
    q.logged_us = num(row[12]);
    out.push_back(std::move(q));
  }
  return out;
}

}  // namespace sqllock::fault
