#include "core/handle/galera_guard.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <map>
#include <utility>

#include "core/handle/database_impl.hpp"
#include "common/message_text.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

using steady = std::chrono::steady_clock;

bool same_name(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The Value of the row whose Variable_name is `name` (SHOW … LIKE answers (Variable_name, Value)
// rows, and its pattern's '_' matches any character); nullopt when there is none.
std::optional<std::string> show_value(const result& r, std::string_view name) {
  for (const auto& row : r.rows) {
    if (row.size() >= 2 && row[0] && same_name(*row[0], name)) return row[1].value_or("");
  }
  return std::nullopt;
}

bool is_off(std::string_view v) noexcept { return same_name(v, "OFF") || v == "0" || same_name(v, "FALSE"); }

std::atomic<bool> g_caller_pinned{false};

// The adapters' verdicts (see refuse_on_galera for callers in galera_guard.hpp).
struct caller_verdicts {
  struct entry {
    galera_verdict verdict;
    steady::time_point asked;
  };
  std::mutex mu;
  std::map<std::pair<const void*, std::uint64_t>, entry> by_connection;  // guarded by mu
};

caller_verdicts& callers() {
  static caller_verdicts* const all = new caller_verdicts;  // never destroyed: used at exit too
  return *all;
}

[[noreturn]] void refuse(node_local_lock kind, std::string_view name, std::string_view server,
                         const galera_verdict& verdict, std::string_view opt_in) {
  throw not_supported(galera_refusal_message(kind, name, server, verdict, opt_in));
}

}  // namespace

std::int64_t galera_cluster_size(const std::optional<std::string>& cluster_size) noexcept {
  if (!cluster_size) return 0;
  std::int64_t n = 0;
  const char* first = cluster_size->data();
  const char* last = first + cluster_size->size();
  const auto [end, ec] = std::from_chars(first, last, n);
  if (ec != std::errc() || end != last || n < 0) return 0;
  return n;
}

galera_verdict judge_galera(const galera_facts& facts) {
  galera_verdict v;
  v.cluster_size = galera_cluster_size(facts.cluster_size);
  v.wsrep_on = facts.wsrep_on.value_or("");
  v.multi_node = v.cluster_size > 1 && !(facts.wsrep_on && is_off(*facts.wsrep_on));
  return v;
}

std::string galera_refusal_message(node_local_lock kind, std::string_view name, std::string_view server,
                                   const galera_verdict& verdict, std::string_view opt_in) {
  const bool named = kind == node_local_lock::get_lock;
  const std::string size = std::to_string(verdict.cluster_size);
  std::string m = named ? "named lock '" : "row lock '";
  m += message_text(name);
  m += "' refused: ";
  m += server;
  m += " is a node of a ";
  m += size;
  m += "-node Galera cluster (wsrep_on=";
  m += verdict.wsrep_on.empty() ? std::string("unknown") : message_text(verdict.wsrep_on);
  m += ", wsrep_cluster_size=";
  m += size;
  m += "), where ";
  if (named) {
    m += "GET_LOCK only locks on the node that runs it, so clients on other nodes would be granted the same lock.";
  } else {
    m += "SELECT … FOR UPDATE only locks on the node that runs it, so transactions on other nodes would hold the "
         "same row lock at the same time (Galera reports a conflict only when both write the same rows, at "
         "COMMIT).";
  }
  m += " Use sqllock::table_lock, which is safe on Galera, or ";
  m += opt_in;
  m += " if every client of these locks connects to the same node.";
  return m;
}

galera_verdict probe_galera(connection& conn, const galera_probe_sql& sql) {
  galera_facts facts;
  facts.cluster_size = show_value(conn.exec_direct(sql.cluster_size), sql.cluster_size_name);
  // wsrep_on only matters for a cluster of several nodes: a server without Galera costs one round trip.
  if (galera_cluster_size(facts.cluster_size) > 1)
    facts.wsrep_on = show_value(conn.exec_direct(sql.wsrep_on), sql.wsrep_on_name);
  return judge_galera(facts);
}

galera_verdict galera_verdict_cache::get(connection& conn, const galera_probe_sql& sql) {
  {
    std::lock_guard lock(mu_);
    if (verdict_) return *verdict_;
  }
  galera_verdict v = probe_galera(conn, sql);
  std::lock_guard lock(mu_);
  if (!verdict_) verdict_ = std::move(v);
  return *verdict_;
}

void refuse_on_galera(database_impl& impl, connection& conn, node_local_lock kind, std::string_view name) {
  const auto& sql = galera_probe_statements(impl.dialect());
  if (!sql.applies || impl.spec().galera_pinned) return;
  const galera_verdict v = impl.galera().get(conn, sql);
  if (v.multi_node) refuse(kind, name, "the server at " + impl.spec().display, v, "add ?galera=pinned to the URI");
}

namespace {

// The verdict for an application's connection (cached: see refuse_on_galera in the header);
// nullopt when nothing need be asked (not MySQL, or the process-wide opt-in).
std::optional<galera_verdict> caller_verdict(connection& conn, dialect_kind dialect, const caller_connection& caller) {
  const auto& sql = galera_probe_statements(dialect);
  if (!sql.applies || caller_galera_pinned()) return std::nullopt;
  auto& all = callers();
  const auto key = std::make_pair(caller.object, caller.server_session);
  std::optional<galera_verdict> v;
  {
    std::lock_guard lock(all.mu);
    if (auto it = all.by_connection.find(key); it != all.by_connection.end()) {
      if (steady::now() - it->second.asked < kCallerVerdictTtl)
        v = it->second.verdict;
      else
        all.by_connection.erase(it);
    }
  }
  if (!v) {
    const auto asked = steady::now();
    v = probe_galera(conn, sql);  // outside the mutex: other threads' connections do not wait for this one
    std::lock_guard lock(all.mu);
    if (all.by_connection.size() >= kCallerVerdictMax) {
      std::erase_if(all.by_connection, [&](const auto& e) { return asked - e.second.asked >= kCallerVerdictTtl; });
      if (all.by_connection.size() >= kCallerVerdictMax) all.by_connection.clear();
    }
    all.by_connection.insert_or_assign(key, caller_verdicts::entry{*v, asked});
  }
  return v;
}

}  // namespace

void refuse_on_galera(connection& conn, dialect_kind dialect, const caller_connection& caller, std::string_view name) {
  const auto v = caller_verdict(conn, dialect, caller);
  if (v && v->multi_node)
    refuse(node_local_lock::for_update, name, "the server of " + std::string(caller.description), *v,
           "call sqllock::set_caller_row_locks_galera_pinned(true)");
}

bool caller_on_multi_node_galera(connection& conn, dialect_kind dialect, const caller_connection& caller) {
  const auto v = caller_verdict(conn, dialect, caller);
  return v && v->multi_node;
}

void set_caller_galera_pinned(bool pinned) noexcept { g_caller_pinned.store(pinned); }
bool caller_galera_pinned() noexcept { return g_caller_pinned.load(); }

}  // namespace sqllock::detail
