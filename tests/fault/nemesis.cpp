#include "fault/nemesis.hpp"

#include <signal.h>

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
  // over the run. The last fault starts early enough to heal before the end: the run then ends
  // with every worker killed.
  std::vector<std::string> round = {"crash", "pause-short", "pause-long", "pause-xlong"};
  if (servers_) round = {"crash", "session-kill", "pause-short", "pause-long", "session-kill", "pause-xlong"};
  if (!cfg_.faults.empty()) round = cfg_.faults;
  const std::int64_t t0 = mono_ns();
  const std::int64_t span = until_ns - t0;
  const std::int64_t quiet = (3 * cfg_.lease.count() + 2000) * 1'000'000;  // longest pause + margin
  std::vector<std::int64_t> server_at;
  const std::vector<std::string> server_kinds = servers_ ? servers_->fault_kinds() : std::vector<std::string>{};
  if (servers_)
    for (int j = 0; j < cfg_.restarts; ++j) server_at.push_back(t0 + span * (j + 1) / (cfg_.restarts + 1));
  std::size_t next = 0, next_server = 0;
  std::int64_t at = t0 + 1'000'000'000;  // let the workers connect first
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
  } else if (kind == "pause-short") {
    pause(kind, L / 4);
  } else if (kind == "pause-long") {
    pause(kind, L * 3 / 2);
  } else if (kind == "pause-xlong") {
    pause(kind, L * 3);
  } else if (kind == "session-kill") {
    session_kill();
  }
}

std::optional<pid_t> nemesis::pick_holder() {
  // A process that holds a lock now; else any living one.
  std::vector<pid_t> holders;
  for (int s = 0; s < cfg_.processes; ++s) {
    const pid_t p = workers_.in_slot(s);
    if (p && holders_.held(s).load() > 0) holders.push_back(p);
  }
  if (holders.empty()) holders = workers_.living();
  if (holders.empty()) return std::nullopt;
  return holders[std::uniform_int_distribution<std::size_t>(0, holders.size() - 1)(rng_)];
}

void nemesis::pause(const std::string& kind, std::chrono::milliseconds d) {
  const auto p = pick_holder();
  if (!p) return;
  const std::int64_t start = workers_.signal(*p, SIGSTOP);
  if (!start) return;
  std::this_thread::sleep_for(d);
  workers_.signal(*p, SIGCONT);
  record({kind, *p, start, mono_ns(), 0});
}

void nemesis::session_kill() {
  try {
    const auto uris = servers_->session_uris();
    database admin(uris[std::uniform_int_distribution<std::size_t>(0, uris.size() - 1)(rng_)]);
    const std::int64_t found_at = mono_ns();
    auto victims = find_victims(admin, cfg_.kind, cfg_.resources, workers_.living());
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
