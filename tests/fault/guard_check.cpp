#include "fault/guard_check.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "fault/hold_story.hpp"

namespace sqllock::fault {
namespace {

class guard_checker {
 public:
  guard_checker(const run_evidence& ev, const std::vector<hold_rec>& holds, report& r) : ev_(ev), holds_(holds), r_(r) {
    for (const char* v : {"stale-guarded-write", "guarded-lost-update", "guarded-writes-none"}) r_.violations[v] += 0;
    for (const char* m : {"guarded-writes-ok", "guarded-writes-lost", "guarded-writes-rej", "guarded-writes-unk",
                          "guarded-writes-stopped", "guarded-lost-updates"})
      r_.metrics[m] += 0;
    for (const auto& h : holds_) by_key_[h.res].push_back(&h);
  }

  void run() {
    for (const auto& h : holds_)
      if (!h.guarded.empty()) ++r_.metrics["guarded-writes-" + h.guarded];
    // A run too starved to try many (a loaded machine: a handful of write holds in 20 s) proves
    // little either way; ten attempts and not one commit is a workload that cannot write.
    std::int64_t tried = 0;
    for (const char* m : {"guarded-writes-ok", "guarded-writes-lost", "guarded-writes-rej", "guarded-writes-unk"})
      tried += r_.metrics[m];
    if (tried >= 10 && r_.metrics["guarded-writes-ok"] == 0)
      violation("guarded-writes-none", std::to_string(tried) + " guarded writes tried, none committed");
    stale_writes();
    counter();
  }

 private:
  void stale_writes() {
    for (const auto& [key, holds] : by_key_) {
      for (const hold_rec* w : holds) {
        if (w->guarded == "lost" && granted_later_before(holds, *w, w->guarded_attempted))
          ++r_.metrics["guarded-writes-stopped"];
        if (w->guarded != "ok" || w->guarded_sent == 0) continue;
        if (const hold_rec* later = granted_later_before(holds, *w, w->guarded_sent))
          violation("stale-guarded-write", describe(*w) + " committed its guarded write (sent at " +
                                               at_ms(w->guarded_sent, t0_) + ") after " + describe(*later) +
                                               " was granted; the stale one: " + hold_story(*w, ev_.faults, t0_));
      }
    }
  }

  // A later grant of w's key (a hold with a higher fence) granted before `at`; nullptr when none.
  static const hold_rec* granted_later_before(const std::vector<const hold_rec*>& holds, const hold_rec& w,
                                              std::int64_t at) {
    const auto it = std::find_if(holds.begin(), holds.end(),
                                 [&](const hold_rec* h) { return h->fence > w.fence && h->start < at; });
    return it == holds.end() ? nullptr : *it;
  }

  void counter() {
    std::map<std::string, std::int64_t> ok, unknown;
    for (const auto& h : holds_) {
      if (h.guarded == "ok") ++ok[h.res];
      if (h.guarded == "unk" || (h.guarded.empty() && h.release.empty() && h.writer)) ++unknown[h.res];
    }
    const bool verdict = ev_.cfg.setup != setup_kind::galera;
    for (const auto& d : ev_.data) {
      const std::int64_t lost = std::max<std::int64_t>(0, ok[d.resource] - d.g);
      r_.metrics["guarded-lost-updates"] += lost;
      const bool phantom = d.g > ok[d.resource] + unknown[d.resource];
      if ((lost > 0 && verdict) || phantom)
        violation("guarded-lost-update", d.resource + ": g = " + std::to_string(d.g) + ", " +
                                             std::to_string(ok[d.resource]) + " guarded writes committed, " +
                                             std::to_string(unknown[d.resource]) + " indeterminate");
    }
  }

  void violation(const std::string& name, const std::string& what) { r_.add_violation(name, what); }

  std::string describe(const hold_rec& h) const { return describe_hold(h, t0_); }

  const run_evidence& ev_;
  const std::vector<hold_rec>& holds_;
  report& r_;
  std::map<std::string, std::vector<const hold_rec*>> by_key_;
  const std::int64_t t0_ = run_start(ev_.events);
};

}  // namespace

void check_guarded(const run_evidence& ev, const std::vector<hold_rec>& holds, report& r) {
  guard_checker(ev, holds, r).run();
}

}  // namespace sqllock::fault
