#include "fault/told_check.hpp"

#include "fault/hold_story.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

namespace sqllock::fault {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr const char* kName = "told-before-granted";

// The lock a history key names: a permit's "r0/1" is name r0's; every other key is the name.
std::string lock_of(const run_config& cfg, const std::string& res) {
  if (cfg.kind != lock_kind::semaphore) return res;
  return res.substr(0, res.rfind('/'));
}

// When `h` stopped claiming its lock: its release began or its process died (end), or it was told
// (a lost signal; one that fired before the section began ends the claim at once).
std::int64_t claim_end(const hold_rec& h) { return h.lost_at ? std::min(h.end, std::max(h.lost_at, h.start)) : h.end; }

class told_checker {
 public:
  told_checker(const run_evidence& ev, const std::vector<hold_rec>& holds, report& r) : ev_(ev), holds_(holds), r_(r) {
    r_.violations[kName] += 0;
    r_.metrics["told-late-max-ms"] += 0;
  }

  void run() {
    cut_off_holders();
    std::map<std::string, std::vector<const hold_rec*>> by_lock;
    for (const auto& h : holds_) by_lock[lock_of(ev_.cfg, h.res)].push_back(&h);
    const std::size_t capacity = ev_.cfg.kind == lock_kind::semaphore ? static_cast<std::size_t>(ev_.cfg.permits) : 1;
    for (auto& [name, hs] : by_lock) {
      std::sort(hs.begin(), hs.end(), [](auto* a, auto* b) { return a->start < b->start; });
      std::vector<const hold_rec*> claiming;
      for (const hold_rec* g : hs) {
        std::erase_if(claiming, [&](const hold_rec* e) { return claim_end(*e) <= g->start; });
        std::vector<const hold_rec*> against;
        for (const hold_rec* e : claiming) {
          if (e->pid == g->pid && e->thread == g->thread) continue;
          if (!g->writer && !e->writer) continue;  // rw: read holds share
          against.push_back(e);
        }
        claiming.push_back(g);
        if (against.size() + 1 <= capacity) continue;
        std::vector<const hold_rec*> untold;  // earliest grant first: the likeliest to have lost it
        std::string why = ended_in_flight(ev_, *g);
        if (!why.empty()) {  // g's grant, not theirs, was the stale one
          ++r_.metrics["told-before-granted-excused-by-" + why];
          continue;
        }
        for (const hold_rec* e : against) {
          const std::string excuse = excused(*e, *g);
          if (excuse.empty())
            untold.push_back(e);
          else if (why.empty())
            why = excuse;
        }
        std::sort(untold.begin(), untold.end(), [](auto* a, auto* b) { return a->start < b->start; });
        if (untold.size() + 1 <= capacity) {
          ++r_.metrics["told-before-granted-excused-by-" + why];
          continue;
        }
        // How long until enough of them stopped claiming for g to fit (for exclusive locks: all).
        std::vector<std::int64_t> ends;
        for (const hold_rec* e : untold) ends.push_back(claim_end(*e));
        std::sort(ends.begin(), ends.end());
        const std::int64_t late = ends[untold.size() - capacity] - g->start;
        r_.metrics["told-late-max-ms"] = std::max(r_.metrics["told-late-max-ms"], late / kMs);
        violation(describe(*g) + " granted while " + describe(*untold.front()) + " was not told" +
                  (untold.front()->lost_at ? " (told at " + when(untold.front()->lost_at) + ")"
                                           : std::string(" (never told)")) +
                  (untold.size() > 1 ? " and " + std::to_string(untold.size() - 1) + " more" : std::string()) +
                  "; the untold one: " + hold_story(*untold.front(), ev_.faults, t0_));
      }
    }
  }

 private:
  // How many holds a partition caught inside their sections, and how many of those stayed in
  // them for a lease from its start (the ones whose loss must be told before another grant).
  void cut_off_holders() {
    const std::int64_t lease = std::chrono::nanoseconds(ev_.cfg.lease).count();
    for (const char* m : {"net-partition-holders", "net-partition-holders-past-lease"}) r_.metrics[m] += 0;
    for (const auto& f : ev_.faults) {
      if (f.kind != "net-partition") continue;
      for (const auto& h : holds_) {
        if (h.pid != f.pid || h.start > f.start || h.end <= f.start) continue;
        ++r_.metrics["net-partition-holders"];
        if (h.end >= f.start + lease) ++r_.metrics["net-partition-holders-past-lease"];
      }
    }
  }

  // The fault, if any, that explains why `e` could not be told before `g` was granted.
  std::string excused(const hold_rec& e, const hold_rec& g) const {
    const bool session_held = !leased(ev_.cfg.kind);  // advisory, named, row
    for (const auto& f : ev_.faults) {
      if (f.start > g.start || f.end < e.called) continue;
      const bool long_pause = f.kind == "pause-long" || f.kind == "pause-xlong";
      if (f.pid == e.pid && long_pause && g.start < f.end + ev_.resume_slack_ms * kMs) return f.kind;
      if (session_held && f.pid == 0) return f.kind;
      if (session_held && f.pid == e.pid && f.kind == "session-kill") return f.kind;
    }
    return "";
  }

  void violation(const std::string& what) { r_.add_violation(kName, what); }

  std::string when(std::int64_t ns) const { return at_ms(ns, t0_); }
  std::string describe(const hold_rec& h) const { return describe_hold(h, t0_); }

  const run_evidence& ev_;
  const std::vector<hold_rec>& holds_;
  report& r_;
  const std::int64_t t0_ = run_start(ev_.events);  // as the other checkers count t=
};

}  // namespace

std::string ended_in_flight(const run_evidence& ev, const hold_rec& g) {
  if (leased(ev.cfg.kind)) return "";
  for (const auto& f : ev.faults)
    if (f.kind == "session-kill" && f.pid == g.pid && g.called <= f.end && f.start <= g.start && g.lost_at != 0 &&
        g.lost_at <= g.start + ev.lost_signal_bound_ms * kMs)
      return "session-kill-in-flight-told-in-time";
  return "";
}

void check_told(const run_evidence& ev, const std::vector<hold_rec>& holds, report& r) {
  told_checker(ev, holds, r).run();
}

}  // namespace sqllock::fault
