#include "fault/nemesis.hpp"

#include <signal.h>

#include <algorithm>
#include <iostream>
#include <thread>

#include "fault/history.hpp"
#include "fault/victims.hpp"
#include "sqllock/error.hpp"

namespace sqllock::fault {
namespace {

void sleep_until_ns(std::int64_t t) {
  const std::int64_t now = mono_ns();
  if (t > now) std::this_thread::sleep_for(std::chrono::nanoseconds(t - now));
}

}  // namespace

nemesis::nemesis(const run_config& cfg, fleet& workers, board& holders, server_setup* servers)
    : cfg_(cfg), workers_(workers), holders_(holders), servers_(servers), rng_(std::random_device{}()) {}

void nemesis::run(std::int64_t until_ns) {
  // Client faults rotate; session kills come twice per round where there is a server. Server
  // faults (the setup's kinds in turn: restarts alternately fast and immediate) are spread evenly
  // over the run. Network faults rotate in a lane of their own. --faults picks both rounds. The
  // last fault starts early enough to heal before the end: the run then ends with every worker
  // killed.
  std::vector<std::string> round = {"crash", "pause-short", "pause-long", "pause-xlong"};
  if (servers_) round = {"crash", "session-kill", "pause-short", "pause-long", "session-kill", "pause-xlong"};
  // The partition last: it may wait for a section to cut off (network()), which a short run has
  // time for only after the others.
  std::vector<std::string> net_round = {"net-stall", "net-latency", "net-retransmit", "net-partition"};
  if (!cfg_.faults.empty()) {
    round.clear();
    net_round.clear();
    for (const auto& f : cfg_.faults) (network_fault(f) ? net_round : round).push_back(f);
  }
  if (!injects_network_faults(cfg_)) net_round.clear();
  const std::int64_t t0 = mono_ns();
  last_start_ = until_ns - quiet_ns();
  // Let the workers connect first; the network lane starts half a spacing later.
  std::jthread net_lane;
  if (!net_round.empty())
    net_lane = std::jthread(
        [&] { lane(net_round, t0 + 1'000'000'000 + cfg_.fault_every.count() * 500'000, until_ns, false); });
  lane(round, t0 + 1'000'000'000, until_ns, true);
}

void nemesis::lane(const std::vector<std::string>& round, std::int64_t first_at, std::int64_t until_ns,
                   bool with_servers) {
  const std::int64_t quiet = quiet_ns();
  std::vector<std::int64_t> server_at;
  const std::vector<std::string> server_kinds = servers_ && with_servers ? servers_->fault_kinds()
                                                                         : std::vector<std::string>{};
  if (!server_kinds.empty()) {
    const std::int64_t t0 = mono_ns(), span = until_ns - t0;
    for (int j = 0; j < cfg_.restarts; ++j) server_at.push_back(t0 + span * (j + 1) / (cfg_.restarts + 1));
  }
  std::size_t next = 0, next_server = 0;
  if (round.empty()) {  // server faults only: each at its time
    for (; next_server < server_at.size() && server_at[next_server] + quiet < until_ns; ++next_server) {
      sleep_until_ns(server_at[next_server]);
      server_fault(server_kinds[next_server % server_kinds.size()]);
    }
    return;
  }
  std::int64_t at = first_at;
  while (at + quiet < until_ns) {
    sleep_until_ns(at);
    if (next_server < server_at.size() && mono_ns() >= server_at[next_server]) {
      server_fault(server_kinds[next_server % server_kinds.size()]);
      ++next_server;
    } else {
      inject(round[next++ % round.size()]);
    }
    at = std::max(at + cfg_.fault_every.count() * 1'000'000, mono_ns() + 500'000'000);
  }
}

void nemesis::inject(const std::string& kind) {
  const auto L = cfg_.lease;
  if (kind == "crash") {
    const auto p = pick_holder();
    if (!p) return;
    if (const std::int64_t t = workers_.signal(*p, SIGKILL)) record({kind, *p, t, t, 0});
    done_with(*p);
  } else if (kind == "pause-short") {
    pause(kind, L / 4);
  } else if (kind == "pause-long") {
    pause(kind, L * 3 / 2);
  } else if (kind == "pause-xlong") {
    pause(kind, L * 3);
  } else if (kind == "session-kill") {
    session_kill();
  } else if (network_fault(kind)) {
    network(kind);
  }
}

std::optional<pid_t> nemesis::pick_holder(std::int64_t section_past, bool only_those) {
  // A process that holds a lock now (in a section that lasts past `section_past`, if one does);
  // else any living one.
  std::lock_guard lock(mu_);
  const auto free = [&](pid_t p) { return std::find(busy_.begin(), busy_.end(), p) == busy_.end(); };
  std::vector<pid_t> holders;
  for (int s = 0; s < cfg_.processes && section_past; ++s) {
    const pid_t p = workers_.in_slot(s);
    if (p && free(p) && holders_.held(s).load() > 0 && holders_.section_until(s) > section_past) holders.push_back(p);
  }
  if (holders.empty() && only_those) return std::nullopt;
  for (int s = 0; s < cfg_.processes && holders.empty(); ++s) {
    const pid_t p = workers_.in_slot(s);
    if (p && free(p) && holders_.held(s).load() > 0) holders.push_back(p);
  }
  if (holders.empty())
    for (const pid_t p : workers_.living())
      if (free(p)) holders.push_back(p);
  if (holders.empty()) return std::nullopt;
  const pid_t p = holders[std::uniform_int_distribution<std::size_t>(0, holders.size() - 1)(rng_)];
  busy_.push_back(p);
  return p;
}

void nemesis::done_with(pid_t pid) {
  std::lock_guard lock(mu_);
  std::erase(busy_, pid);
}

void nemesis::pause(const std::string& kind, std::chrono::milliseconds d) {
  const auto p = pick_holder();
  if (!p) return;
  const std::int64_t start = workers_.signal(*p, SIGSTOP);
  if (start) {
    std::this_thread::sleep_for(d);
    workers_.signal(*p, SIGCONT);
    record({kind, *p, start, mono_ns(), 0});
  }
  done_with(*p);
}

void nemesis::network(const std::string& kind) {
  const auto L = cfg_.lease;
  net_order o;
  std::chrono::milliseconds d{};
  if (kind == "net-partition" || kind == "net-stall") {
    o.freeze = true;
    d = kind == "net-partition" ? L * 3 / 2 : L / 2;
  } else if (kind == "net-latency") {
    o.delay_ms = static_cast<int>((L / 20).count());
    d = L;
  } else if (kind == "net-retransmit") {
    o.stall_permille = 100;
    o.stall_ms = static_cast<int>((L / 10).count());
    d = L;
  } else {
    return;
  }
  // A partition: a section that outlasts the lease from now, if one comes within 2 L (and while a
  // fault may still start).
  const auto outlasting = [&] { return mono_ns() + (L * 2 / 3).count() * 1'000'000; };
  std::optional<pid_t> p;
  if (kind == "net-partition") {
    const std::int64_t give_up = std::min(mono_ns() + 2 * L.count() * 1'000'000, last_start_);
    while (!(p = pick_holder(outlasting(), true)) && mono_ns() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!p) p = pick_holder();
  if (!p) return;
  o.pid = *p;
  // Whatever becomes of this thread, the worker heals by itself a second after the fault's end.
  o.heal_at = mono_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(d).count() + 1'000'000'000;
  if (const std::int64_t start = order(*p, o)) {
    std::this_thread::sleep_for(d);
    net_order heal;
    heal.pid = *p;
    const std::int64_t end = order(*p, heal);
    record({kind, *p, start, end ? end : mono_ns(), 0});
  } else {
    net_order heal;  // it did not answer (it died, or never had a proxy): take the order back
    heal.pid = *p;
    order(*p, heal);
  }
  done_with(*p);
}

std::int64_t nemesis::order(pid_t pid, const net_order& o) {
  int slot = -1;
  for (int s = 0; s < cfg_.processes && slot < 0; ++s)
    if (workers_.in_slot(s) == pid) slot = s;
  if (slot < 0) return 0;
  const std::int64_t number = holders_.post(slot, o);
  const std::int64_t give_up = mono_ns() + 1'000'000'000;
  while (mono_ns() < give_up) {
    if (const auto at = holders_.applied(slot, number)) return *at;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return 0;
}

void nemesis::session_kill() {
  // The victim is found by its session, not picked: it may be a process another fault is hitting.
  try {
    const auto uris = servers_->session_uris();
    database admin(uris[std::uniform_int_distribution<std::size_t>(0, uris.size() - 1)(rng_)]);
    std::int64_t found_at = mono_ns();
    auto victims = find_victims(admin, cfg_.kind, cfg_.resources, servers_->session_clients(workers_.living()));
    // A pooler's server session matters while a client's transaction runs on it: one of those, if
    // one is caught within L/4 (else any, which only the pooler notices).
    if (servers_->pooled()) {
      const std::int64_t give_up = mono_ns() + std::chrono::nanoseconds(cfg_.lease / 4).count();
      while (!victims.empty()) {
        const std::int64_t start = mono_ns();
        if (const auto v = kill_one_in_transaction(admin, victims)) {
          record({"session-kill", v->pid, start, mono_ns(), v->session, found_at});
          return;
        }
        if (mono_ns() >= give_up) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        found_at = mono_ns();
        victims = find_victims(admin, cfg_.kind, cfg_.resources, servers_->session_clients(workers_.living()));
      }
    }
    if (victims.empty()) return;
    const auto v = victims[std::uniform_int_distribution<std::size_t>(0, victims.size() - 1)(rng_)];
    const std::int64_t start = mono_ns();
    if (kill_session(admin, v.session)) record({"session-kill", v.pid, start, mono_ns(), v.session, found_at});
  } catch (const error& e) {
    std::cerr << "nemesis: session-kill skipped: " << e.what() << '\n';
  }
}

void nemesis::server_fault(const std::string& kind) {
  const auto steps = servers_->inject(kind);
  for (const auto& s : steps) record({s.kind, 0, s.start, s.end, 0});
  if (steps.empty()) std::cerr << "nemesis: server fault " << kind << " failed\n";
}

void nemesis::record(fault_event e) {
  std::lock_guard lock(mu_);
  log_.push_back(std::move(e));
}

std::vector<fault_event> nemesis::log() const {
  std::lock_guard lock(mu_);
  return log_;
}

std::map<std::string, int> nemesis::counts() const {
  std::lock_guard lock(mu_);
  std::map<std::string, int> out;
  for (const auto& e : log_) ++out[e.kind];
  return out;
}

}  // namespace sqllock::fault
