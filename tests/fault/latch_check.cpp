#include "fault/latch_check.hpp"

#include <map>
#include <set>
#include <string>
#include <utility>

namespace sqllock::fault {
namespace {

class latch_checker {
 public:
  latch_checker(const run_evidence& ev, report& r) : ev_(ev), r_(r) {
    for (const char* v : {"early-open", "double-count", "uncounted-arrival"}) r_.violations[v] += 0;
  }

  void run() {
    server_log();
    states();
    waits();
    count_downs();
  }

 private:
  struct generation {
    std::int64_t initial = 0;
    std::int64_t drops = 0;  // the count's decrements, in units
    std::set<std::string> arrived;
    std::int64_t nth_arrival_us = -1;  // when the N-th distinct arrival was logged
    bool opened = false;
  };
  using key = std::pair<std::string, std::int64_t>;  // (latch, generation)

  void violation(const std::string& name, const std::string& what) { r_.add_violation(name, what); }
  void bump(const std::string& name, std::int64_t by = 1) { r_.metrics[name] += by; }
  static std::string gen_name(const key& k) { return k.first + " generation " + std::to_string(k.second); }

  // The server's log, per latch in the order of its changes.
  void server_log() {
    for (const auto& row : ev_.latch_log) {
      const key k{row.resource, row.generation};
      generation& g = gens_[k];
      switch (row.event) {
        case 'R':
          g.initial = row.initial;
          bump("latch-generations-armed");
          break;
        case 'A':
          bump("latch-arrivals");
          ++arrivals_of_[row.resource + "/" + row.participant];
          if (!g.arrived.insert(row.participant).second)
            violation("double-count", gen_name(k) + ": participant " + row.participant + " logged twice");
          if (static_cast<std::int64_t>(g.arrived.size()) == g.initial) g.nth_arrival_us = row.logged_us;
          break;
        case 'D': {
          const std::int64_t step = row.old_count - row.new_count;
          g.drops += step;
          if (step != 1)
            violation("double-count", gen_name(k) + ": the count went from " + std::to_string(row.old_count) + " to " +
                                          std::to_string(row.new_count) + " in one change");
          if (row.new_count == 0 && !g.opened) {
            g.opened = true;
            bump("latch-generations-opened");
            const auto have = static_cast<std::int64_t>(g.arrived.size());
            if (have < g.initial)
              violation("early-open", gen_name(k) + " opened (server) with " + std::to_string(have) + " of " +
                                          std::to_string(g.initial) + " distinct arrivals logged");
          }
          break;
        }
        default: break;
      }
    }
    for (const auto& [k, g] : gens_) {
      const auto have = static_cast<std::int64_t>(g.arrived.size());
      if (g.drops > have)
        for (std::int64_t i = have; i < g.drops; ++i)
          violation("double-count", gen_name(k) + ": the count dropped " + std::to_string(g.drops) + " times for " +
                                        std::to_string(have) + " distinct arrivals");
      if (g.drops < have)
        violation("uncounted-arrival", gen_name(k) + ": " + std::to_string(have) + " arrivals, the count dropped " +
                                           std::to_string(g.drops) + " times");
    }
  }

  // A state() read: open with fewer than N arrivals listed; more drops than arrivals. (The
  // arrivals are read after the count; within a generation they only grow.)
  void states() {
    for (const auto& e : ev_.events) {
      if (e.type != 'S' || e.fields.size() < 4) continue;
      bump("latch-state-reads");
      const bool open = e.fields[0] == "1";
      const std::int64_t initial = std::stoll(e.fields[1]), count = std::stoll(e.fields[2]),
                         arrived = std::stoll(e.fields[3]);
      if (open && arrived < initial)
        violation("early-open", e.resource + " generation " + std::to_string(e.fence) + ": state() read it open with " +
                                    std::to_string(arrived) + " of " + std::to_string(initial) + " arrivals (pid " +
                                    std::to_string(e.pid) + ")");
      else if (arrived < initial - count)
        violation("double-count", e.resource + " generation " + std::to_string(e.fence) + ": state() read count " +
                                      std::to_string(count) + " of " + std::to_string(initial) + " with " +
                                      std::to_string(arrived) + " arrivals (pid " + std::to_string(e.pid) + ")");
    }
  }

  // A wait that returned open for generation g: the N-th distinct arrival of g must have been
  // logged (so written, before its commit) before the wait returned.
  void waits() {
    for (const auto& e : ev_.events) {
      if (e.type != 'W' || e.fields.empty()) continue;
      bump("latch-waits-" + e.fields[0]);
      if (e.fields[0] != "open") continue;
      const auto it = gens_.find({e.resource, e.fence});
      if (it == gens_.end() || it->second.nth_arrival_us < 0) {
        violation("early-open", e.resource + " generation " + std::to_string(e.fence) +
                                    ": a waiter saw it open, but it never had its N distinct arrivals (pid " +
                                    std::to_string(e.pid) + ")");
        continue;
      }
      const std::int64_t nth_mono = it->second.nth_arrival_us * 1000 - ev_.realtime_minus_mono_ns;
      if (nth_mono > e.mono)
        violation("early-open", e.resource + " generation " + std::to_string(e.fence) + ": a waiter saw it open " +
                                    std::to_string((nth_mono - e.mono) / 1000) +
                                    " us before its N-th distinct arrival was logged (pid " + std::to_string(e.pid) +
                                    ")");
    }
  }

  // Count-downs as the clients saw them.
  void count_downs() {
    std::map<std::string, std::int64_t> counted;
    std::map<std::string, std::set<std::int64_t>> generations_of;
    for (const auto& e : ev_.events) {
      if (e.type == 'E') bump("latch-count-down-errors");
      if (e.type != 'D' || e.fields.size() < 4) continue;
      const std::string& outcome = e.fields[0];
      bump(outcome == "1"   ? "latch-count-downs-counted"
           : outcome == "0" ? "latch-count-downs-repeat"
                            : "latch-count-downs-not-armed");
      if (std::stoll(e.fields[2]) > 1) bump("latch-count-downs-retried");
      if (outcome == "1") ++counted[e.resource + "/" + e.fields[3]];
    }
    for (const auto& [k, g] : gens_)
      for (const auto& who : g.arrived) generations_of[k.first + "/" + who].insert(k.second);
    for (const auto& [who, gens] : generations_of)
      if (gens.size() > 1) bump("latch-participants-in-two-generations");
    for (const auto& [who, n] : counted) {
      const auto it = arrivals_of_.find(who);
      const std::int64_t logged = it == arrivals_of_.end() ? 0 : it->second;
      if (n > logged)
        violation("double-count", "participant " + who + " (latch/id): its count-downs reported counted " +
                                      std::to_string(n) + " times, the server logged " + std::to_string(logged) +
                                      " arrivals of it");
    }
  }

  const run_evidence& ev_;
  report& r_;
  std::map<key, generation> gens_;
  std::map<std::string, std::int64_t> arrivals_of_;  // "<latch>/<participant>" -> arrival rows
};

}  // namespace

void check_latch(const run_evidence& ev, report& r) { latch_checker(ev, r).run(); }

}  // namespace sqllock::fault
