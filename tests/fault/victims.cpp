#include "fault/victims.hpp"

#include <optional>
#include <set>
#include <string>

#include "fault/schema.hpp"
#include "sqllock/named_lock.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {
namespace {

using test::sql;

// The ids of the sessions that matter for `kind`: those holding (or, for row locks, inside the
// critical section of) a lock of that kind; nullopt for table locks, whose holders keep no
// session, so any session may be killed (also for latches, which hold nothing).
std::optional<std::set<std::int64_t>> sessions_of_kind(const database& admin, lock_kind kind, int resources) {
  if (leased(kind) || kind == lock_kind::latch) return std::nullopt;  // latch: any count-down's or waiter's
  std::set<std::int64_t> out;
  const auto add_rows = [&](const detail::result& r) {
    for (const auto& row : r.rows)
      if (row[0]) out.insert(std::stoll(*row[0]));
  };
  if (admin.dialect() == dialect_kind::postgresql) {
    add_rows(sql(admin, kind == lock_kind::advisory
                            ? "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
                            : "SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction'"));
  } else if (kind == lock_kind::named) {
    for (int i = 0; i < resources; ++i)
      add_rows(sql(admin, "SELECT IS_USED_LOCK($1)", {named_lock_server_name(resource_name(i))}));
  } else {
    add_rows(sql(admin, "SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX WHERE trx_rows_locked > 0"));
  }
  return out;
}

}  // namespace

std::vector<victim> find_victims(const database& admin, lock_kind kind, int resources,
                                 const std::vector<pid_t>& workers) {
  const auto wanted = sessions_of_kind(admin, kind, resources);
  const int server_port = test::server_port(admin);
  std::vector<victim> out;
  for (const auto& s : test::client_sessions(admin)) {
    if (wanted && !wanted->count(s.id)) continue;
    if (const pid_t p = test::process_of_client_port(s.client_port, server_port, workers)) out.push_back({s.id, p});
  }
  return out;
}

std::optional<victim> kill_one_in_transaction(const database& admin, const std::vector<victim>& victims) {
  if (victims.empty()) return std::nullopt;
  std::string ids = "{";
  for (const auto& v : victims) ids += (ids.size() > 1 ? "," : "") + std::to_string(v.session);
  ids += "}";
  // LIMIT in the subquery: the state is checked before any session is ended.
  const auto r = sql(admin,
                     "SELECT pid FROM (SELECT pid FROM pg_stat_activity WHERE pid = ANY(CAST($1 AS integer[]))"
                     " AND state IN ('active', 'idle in transaction') LIMIT 1) busy WHERE pg_terminate_backend(pid)",
                     {ids});
  if (r.rows.empty() || !r.rows[0][0]) return std::nullopt;
  const std::int64_t killed = std::stoll(*r.rows[0][0]);
  for (const auto& v : victims)
    if (v.session == killed) return v;
  return std::nullopt;
}

}  // namespace sqllock::fault
