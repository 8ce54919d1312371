#include "fault/multi_check.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fault/multi_worker.hpp"

namespace sqllock::fault {
namespace {

// The attempt's set id in an owner token "<session>/k:set-…"; "" for any other owner (liveness
// probes, lock objects without an attempt key).
std::string set_of(const std::string& owner) {
  const auto at = owner.rfind("/k:");
  if (at == std::string::npos) return "";
  std::string key = owner.substr(at + 3);
  return key.rfind(kSetOwnerPrefix, 0) == 0 ? key : "";
}

}  // namespace

void check_multi(const run_evidence& ev, report& r) {
  const auto k = static_cast<std::size_t>(ev.cfg.names_per_set);
  r.violations["partial-grant"] += 0;
  const auto violation = [&](const std::string& what) { r.add_violation("partial-grant", what); };

  // Server side: the log's grants per attempt.
  std::map<std::string, std::vector<const grant_row*>> by_set;
  std::map<std::pair<std::string, std::int64_t>, const grant_row*> by_fence;
  for (const auto& g : ev.grants) {
    by_fence[{g.resource, g.fence}] = &g;
    if (auto id = set_of(g.owner); !id.empty()) by_set[id].push_back(&g);
  }
  std::int64_t set_grants = 0, dead_on_arrival = 0;
  for (const auto& [id, grants] : by_set) {
    set_grants += static_cast<std::int64_t>(grants.size());
    std::map<std::string, std::vector<const grant_row*>> per_name;
    for (const auto* g : grants) per_name[g->resource].push_back(g);
    std::string names;
    for (const auto& [name, gs] : per_name) names += " " + name + "x" + std::to_string(gs.size());
    if (per_name.size() != k) {
      violation(id + " granted " + std::to_string(per_name.size()) + " of " + std::to_string(k) + " names:" + names);
      continue;
    }
    const std::size_t n = per_name.begin()->second.size();
    if (std::any_of(per_name.begin(), per_name.end(), [&](const auto& p) { return p.second.size() != n; })) {
      violation(id + " granted its names unequally often:" + names);
      continue;
    }
    // The first grant of each name (the log is in logged_at order per resource): all live at once.
    std::int64_t last_logged = std::numeric_limits<std::int64_t>::min(),
                 first_end = std::numeric_limits<std::int64_t>::max();
    std::int64_t last_expiry = std::numeric_limits<std::int64_t>::min();
    for (const auto& [name, gs] : per_name) {
      const auto* g = gs.front();
      last_logged = std::max(last_logged, g->logged_us);
      last_expiry = std::max(last_expiry, g->expires_us);
      first_end = std::min(first_end, g->deleted_us ? std::min(g->expires_us, *g->deleted_us) : g->expires_us);
    }
    // An attempt whose rows were all written after every one of their leases had run out (its
    // statement waited on row locks for longer than the lease) committed, after that, nothing
    // anyone could see as held: it granted no name, and the client gives such a grant back
    // (a grant that returns a full ttl after it was sent). Not a partial grant.
    if (last_logged >= last_expiry) {
      ++dead_on_arrival;
      continue;
    }
    if (last_logged > first_end)
      violation(id + ": a name's grant ended " + std::to_string(last_logged - first_end) +
                " us before another name of the set was granted:" + names);
  }

  // Client side: every section entered holds K names, each granted to its attempt by the log.
  std::int64_t entered = 0;
  for (const auto& e : ev.events) {
    if (e.type != 'M' || e.fields.empty()) continue;
    ++entered;
    const std::string& id = e.fields[0];
    std::set<std::string> names;
    for (std::size_t i = 1; i < e.fields.size(); ++i) {
      const auto& f = e.fields[i];
      const auto colon = f.rfind(':');
      const std::string name = f.substr(0, colon);
      names.insert(name);
      const std::int64_t fence = colon == std::string::npos ? -1 : std::stoll(f.substr(colon + 1));
      const auto it = by_fence.find({name, fence});
      if (it == by_fence.end() || set_of(it->second->owner) != id)
        violation("section " + id + " entered with " + f + ", which the log " +
                  (it == by_fence.end() ? std::string("never granted") : "granted to " + it->second->owner));
    }
    if (names.size() != k)
      violation("section " + id + " entered with " + std::to_string(names.size()) + " distinct names of " +
                std::to_string(k));
  }
  r.metrics["multi-sets-entered"] = entered;
  r.metrics["multi-server-sets"] = static_cast<std::int64_t>(by_set.size());
  r.metrics["multi-server-set-grants"] = set_grants;
  r.metrics["multi-server-sets-expired-when-granted"] = dead_on_arrival;
}

}  // namespace sqllock::fault
