#include "fault/latch_log.hpp"

#include "fault/schema.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {
namespace {

using test::sql;

constexpr const char* kCols =
    "(event, resource, generation, participant, old_count, new_count, initial_count, logged_at)";

std::vector<std::string> latch_log_ddl(dialect_kind d) {
  // SQL text laid out by hand: clang-format 14 would break it around each `+`.
  // clang-format off
  const std::string now(trigger_now(d));
  const std::string ins = std::string("INSERT INTO fault_latch_log ") + kCols;
  const std::string arm =
      ins + " VALUES ('R', NEW.resource, NEW.generation, NULL, NEW.count, NEW.count, NEW.initial_count, " + now + ")";
  const std::string change =
      ins + " VALUES ('D', NEW.resource, NEW.generation, NULL, OLD.count, NEW.count, NEW.initial_count, " + now + ")";
  const std::string arrival =
      ins + " VALUES ('A', NEW.resource, NEW.generation, NEW.participant, 0, 0, 0, " + now + ")";
  switch (d) {
    case dialect_kind::postgresql:
      return {
          "CREATE TABLE fault_latch_log (id bigserial PRIMARY KEY, event text NOT NULL, resource text NOT NULL,"
          " generation bigint NOT NULL, participant text, old_count bigint NOT NULL, new_count bigint NOT NULL,"
          " initial_count bigint NOT NULL, logged_at timestamptz NOT NULL)",
          "CREATE FUNCTION fault_latch_row_log() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
          " IF TG_OP = 'INSERT' OR NEW.generation <> OLD.generation THEN " + arm + ";"
          " ELSIF NEW.count <> OLD.count THEN " + change + "; END IF; RETURN NULL; END $f$",
          "CREATE TRIGGER fault_latch_row_log AFTER INSERT OR UPDATE ON distributed_lock_latches"
          " FOR EACH ROW EXECUTE FUNCTION fault_latch_row_log()",
          "CREATE FUNCTION fault_latch_arrival_log() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN " + arrival +
              "; RETURN NULL; END $f$",
          "CREATE TRIGGER fault_latch_arrival_log AFTER INSERT ON distributed_lock_latch_arrivals"
          " FOR EACH ROW EXECUTE FUNCTION fault_latch_arrival_log()",
      };
    case dialect_kind::mysql:
      return {
          "CREATE TABLE fault_latch_log (id BIGINT AUTO_INCREMENT PRIMARY KEY, event CHAR(1) NOT NULL,"
          " resource VARBINARY(255) NOT NULL, generation BIGINT NOT NULL, participant VARBINARY(255) NULL,"
          " old_count BIGINT NOT NULL, new_count BIGINT NOT NULL, initial_count BIGINT NOT NULL,"
          " logged_at DATETIME(6) NOT NULL) ENGINE=InnoDB",
          "CREATE TRIGGER fault_latch_ins AFTER INSERT ON distributed_lock_latches FOR EACH ROW " + arm,
          "CREATE TRIGGER fault_latch_upd AFTER UPDATE ON distributed_lock_latches FOR EACH ROW BEGIN"
          " IF NEW.generation <> OLD.generation THEN " + arm + "; ELSEIF NEW.count <> OLD.count THEN " + change +
              "; END IF; END",
          "CREATE TRIGGER fault_latch_arr AFTER INSERT ON distributed_lock_latch_arrivals FOR EACH ROW " + arrival,
      };
    case dialect_kind::sqlite:
      return {
          "CREATE TABLE fault_latch_log (id INTEGER PRIMARY KEY AUTOINCREMENT, event TEXT NOT NULL, resource TEXT NOT NULL,"
          " generation INTEGER NOT NULL, participant TEXT, old_count INTEGER NOT NULL, new_count INTEGER NOT NULL,"
          " initial_count INTEGER NOT NULL, logged_at TEXT NOT NULL)",
          "CREATE TRIGGER fault_latch_ins AFTER INSERT ON distributed_lock_latches BEGIN " + arm + "; END",
          "CREATE TRIGGER fault_latch_arm AFTER UPDATE ON distributed_lock_latches WHEN NEW.generation <> OLD.generation"
          " BEGIN " + arm + "; END",
          "CREATE TRIGGER fault_latch_count AFTER UPDATE ON distributed_lock_latches"
          " WHEN NEW.generation = OLD.generation AND NEW.count <> OLD.count BEGIN " + change + "; END",
          "CREATE TRIGGER fault_latch_arr AFTER INSERT ON distributed_lock_latch_arrivals BEGIN " + arrival + "; END",
      };
  }
  return {};
  // clang-format on
}

}  // namespace

void create_latch_log(const database& db) {
  for (const auto& statement : latch_log_ddl(db.dialect())) sql(db, statement);
}

std::vector<latch_log_row> read_latch_log(const database& db) {
  const auto r = sql(db, "SELECT id, event, resource, generation, participant, old_count, new_count, initial_count, " +
                             micros(db.dialect(), "logged_at") + " FROM fault_latch_log ORDER BY resource, id");
  const auto num = [](const detail::field& f) -> std::int64_t { return f ? std::stoll(*f) : 0; };
  std::vector<latch_log_row> out;
  for (const auto& row : r.rows) {
    latch_log_row l;
    l.id = num(row[0]);
    l.event = row[1].value_or("?").empty() ? '?' : row[1]->front();
    l.resource = row[2].value_or("");
    l.generation = num(row[3]);
    l.participant = row[4].value_or("");
    l.old_count = num(row[5]);
    l.new_count = num(row[6]);
    l.initial = num(row[7]);
    l.logged_us = num(row[8]);
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace sqllock::fault
