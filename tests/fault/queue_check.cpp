#include "fault/queue_check.hpp"

#include "fault/hold_story.hpp"
#include "fault/spans.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>

namespace sqllock::fault {
namespace {

constexpr std::int64_t kMs = 1'000'000;  // nanoseconds per millisecond
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

// A fault's reach into one name's queue: nothing can be asked of the queue before `until`.
struct excuse {
  std::int64_t at = 0;     // when it happened
  std::int64_t until = 0;  // max(start + L, end): a place it left behind has run out, and it is over
  std::string what;
};

class queue_checker {
 public:
  queue_checker(const run_evidence& ev, const std::vector<hold_rec>& holds, report& r) : ev_(ev), r_(r) {
    for (const char* v : {"write-overlap", "ticket-order", "ticket-arrival", "fence-order", "queue-stall"})
      r_.violations[v] += 0;
    for (const auto& h : holds) holds_[h.res].push_back(&h);
    for (const auto& q : ev.queue_log) places_[q.resource].push_back(&q);
    for (const auto& w : ev.workers) killed_at_[w.pid] = w.killed_at;
    for (const auto& f : ev.faults)
      if (f.pid != 0 && f.kind.rfind("pause", 0) == 0) paused_[f.pid].emplace_back(f.start, f.end);
    for (auto& [pid, ps] : paused_) ps = merged(ps);
  }

  void run() {
    metric("queue-places", static_cast<std::int64_t>(ev_.queue_log.size()));
    std::int64_t writes = 0, reads = 0, torn = 0;
    for (const auto& [res, hs] : holds_)
      for (const auto* h : hs) {
        ++(h->writer ? writes : reads);
        if (!h->writer && h->u_first >= 0 && h->u_last >= 0 && h->u_last != h->u_first) ++torn;
      }
    metric("queue-holds-write", writes);
    metric("queue-holds-read", reads);
    metric("reads-torn", torn);
    for (const auto& [res, hs] : holds_) {
      const auto& qs = places_[res];
      write_overlap(res, hs);
      ticket_order(res, hs, qs);
      fence_order(res, hs);
    }
    for (const auto& [res, qs] : places_) ticket_arrival(res, qs);
    queue_stall();
    std::int64_t unheld = 0;
    for (const auto& q : ev_.queue_log)
      if (!first_read(q.resource, q.ticket)) ++unheld;
    metric("queue-places-left-unheld", unheld);
    metric("queue-holds-stale-at-first-read", stale_);
    metric("write-overlap-max-us", overlap_max_us_);
  }

 private:
  void violation(const std::string& name, const std::string& what) { r_.add_violation(name, what); }
  void metric(const std::string& name, std::int64_t v) { r_.metrics[name] = v; }

  static std::string describe(const hold_rec& h) {
    return h.res + " ticket " + std::to_string(h.fence) + " (" + (h.writer ? "write" : "read") + ") pid " +
           std::to_string(h.pid) + "/" + std::to_string(h.thread) + " first read " + std::to_string(h.db_us) + " us";
  }
  static std::string describe(const queue_log_row& q) {
    return "place " + std::to_string(q.ticket) + " (" + (q.writer ? "writer" : "reader") + ", pid " +
           std::to_string(q.pid) + ", " + q.owner + ") logged " + std::to_string(q.logged_us) + " us, end " +
           std::to_string(q.end_us()) + " us (" + q.end_event + ")";
  }

  // The place of ticket `ticket` of `res`; null when the log has none.
  const queue_log_row* place(const std::string& res, std::int64_t ticket) {
    const auto& qs = places_[res];
    const auto it = std::lower_bound(qs.begin(), qs.end(), ticket,
                                     [](const queue_log_row* q, std::int64_t t) { return q->ticket < t; });
    return it != qs.end() && (*it)->ticket == ticket ? *it : nullptr;
  }

  // The earliest first read of a hold of (res, ticket), 0 when none was recorded.
  std::int64_t first_read(const std::string& res, std::int64_t ticket) {
    if (first_reads_.empty())
      for (const auto& [r, hs] : holds_)
        for (const auto* h : hs)
          if (h->db_us > 0) {
            auto& v = first_reads_[{r, h->fence}];
            v = v ? std::min(v, h->db_us) : h->db_us;
          }
    const auto it = first_reads_.find({res, ticket});
    return it == first_reads_.end() ? 0 : it->second;
  }

  // [first read, end of its place) on the database clock; empty (second <= first) when unknown.
  std::pair<std::int64_t, std::int64_t> in_force(const hold_rec& h) {
    const auto* q = place(h.res, h.fence);
    if (!q || h.db_us <= 0) return {0, 0};
    return {h.db_us, q->end_us()};
  }

  void write_overlap(const std::string& res, const std::vector<const hold_rec*>& hs) {
    struct held {
      const hold_rec* h;
      std::int64_t from, to;
    };
    std::vector<held> on;
    for (const auto* h : hs) {
      const auto [from, to] = in_force(*h);
      if (h->db_us > 0 && to <= from && place(res, h->fence)) ++stale_;
      if (to > from) on.push_back({h, from, to});
    }
    std::sort(on.begin(), on.end(), [](const held& a, const held& b) { return a.from < b.from; });
    std::vector<held> active;
    for (const auto& x : on) {
      std::erase_if(active, [&](const held& a) { return a.to <= x.from; });
      for (const auto& a : active) {
        if (a.h->fence == x.h->fence || (!a.h->writer && !x.h->writer)) continue;
        const std::int64_t us = std::min(a.to, x.to) - x.from;
        overlap_max_us_ = std::max(overlap_max_us_, us);
        violation("write-overlap", describe(*x.h) + " began while " + describe(*a.h) + " was in force until " +
                                       std::to_string(a.to) + " us (" + std::to_string(us) + " us together)");
      }
      active.push_back(x);
    }
  }

  void ticket_order(const std::string& res, const std::vector<const hold_rec*>& hs,
                    const std::vector<const queue_log_row*>& qs) {
    for (const auto* h : hs) {
      if (h->db_us <= 0) continue;
      const std::int64_t at = h->db_us;
      for (const auto* q : qs) {
        if (q->ticket >= h->fence) break;  // qs is in ticket order
        if (q->logged_us >= at || q->end_us() <= at || !q->blocks(h->writer, at)) continue;
        const std::int64_t began = first_read(res, q->ticket);
        if (began > 0 && began <= at) continue;  // holding then: an overlap, not a skip
        violation("ticket-order",
                  describe(*h) + " while lower " + describe(*q) + " still waited" +
                      (began > 0 ? " (it held from " + std::to_string(began) + " us)" : std::string(" (never held)")));
      }
    }
  }

  void ticket_arrival(const std::string& res, const std::vector<const queue_log_row*>& qs) {
    std::int64_t latest = std::numeric_limits<std::int64_t>::min();
    const queue_log_row* by = nullptr;
    for (const auto* q : qs) {
      if (by && q->kind == by->kind && q->logged_us < latest)
        violation("ticket-arrival", res + " " + describe(*q) + " logged before lower " + describe(*by));
      if (!by || q->kind != by->kind || q->logged_us > latest) {
        latest = q->logged_us;
        by = q;
      }
    }
  }

  void fence_order(const std::string& res, const std::vector<const hold_rec*>& hs) {
    std::vector<std::pair<std::int64_t, const hold_rec*>> on;
    for (const auto* h : hs) {
      const auto [from, to] = in_force(*h);
      if (to > from) on.emplace_back(from, h);
    }
    std::sort(on.begin(), on.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::int64_t top_any = -1, top_writer = -1;
    std::size_t i = 0;
    while (i < on.size()) {
      std::size_t j = i;  // holds that began at the same instant are judged against those before
      while (j < on.size() && on[j].first == on[i].first) ++j;
      for (std::size_t k = i; k < j; ++k) {
        const auto* h = on[k].second;
        // An equal ticket is the same place held again (a ticket is unique per name): not a new grant.
        const std::int64_t above = h->writer ? top_any : top_writer;
        if (h->fence < above)
          violation("fence-order", res + ": " + describe(*h) + " after a hold with ticket " + std::to_string(above));
      }
      for (std::size_t k = i; k < j; ++k) {
        const auto* h = on[k].second;
        top_any = std::max(top_any, h->fence);
        if (h->writer) top_writer = std::max(top_writer, h->fence);
      }
      i = j;
    }
  }

  // ---- queue-stall

  std::int64_t mono_of_db(std::int64_t us) const { return us * 1000 - ev_.realtime_minus_mono_ns; }

  // The times `pid` was not running (paused, or dead from its kill on).
  std::vector<span> down(pid_t pid) const {
    std::vector<span> out;
    if (const auto it = paused_.find(pid); it != paused_.end()) out = it->second;
    if (const auto it = killed_at_.find(pid); it != killed_at_.end() && it->second)
      out.emplace_back(it->second, kNever);
    return merged(out);
  }

  // When `pid`, not running at `t` (paused, or dead), ran again (kNever after a kill); 0 when it
  // was running at `t`.
  std::int64_t down_until(pid_t pid, std::int64_t t) const {
    for (const auto& d : down(pid))
      if (d.first <= t && t < d.second) return d.second;
    return 0;
  }

  void queue_stall() {
    const std::int64_t slack = ev_.queue_stall_slack_ms * kMs;
    const std::int64_t lease = ev_.cfg.lease.count() * kMs;
    const bool shared_counter = ev_.cfg.dialect != dialect_kind::postgresql;
    std::int64_t windows = 0, longest = 0, handoff = 0;
    std::map<std::string, std::vector<span>> busy, awaited;
    std::map<std::string, std::vector<std::pair<pid_t, span>>> calls;    // calls and holds, per name
    std::map<std::string, std::vector<std::pair<pid_t, span>>> waiters;  // acquire calls, per name
    std::map<std::string, std::vector<excuse>> excuses;
    const auto add = [&](std::map<std::string, std::vector<span>>& m, const std::string& res, pid_t pid, span s) {
      for (const auto& x : minus({s}, down(pid))) m[res].push_back(x);
    };
    for (const auto& [res, hs] : holds_)
      for (const auto* h : hs) {
        const std::int64_t end = h->release_at ? h->release_at : h->end;
        add(busy, res, h->pid, {h->start, end});
        calls[res].push_back({h->pid, {h->called, end}});
        if (!h->release.empty() && h->release != "ok")
          excuses[res].push_back({h->release_at, h->release_at + lease, "release " + h->release});
      }
    for (const auto& e : ev_.events) {
      if (e.type != 'A' && e.type != 'G' && e.type != 'T') continue;
      const std::size_t at = e.type == 'A' ? 2 : e.type == 'G' ? 0 : 1;
      const std::int64_t called = at < e.fields.size() ? std::stoll(e.fields[at]) : e.mono;
      add(awaited, e.resource, e.pid, {called, e.mono});
      waiters[e.resource].push_back({e.pid, {called, e.mono}});
      if (e.type != 'A') calls[e.resource].push_back({e.pid, {called, e.mono}});
      if (e.type == 'T') excuses[e.resource].push_back({e.mono, e.mono + lease, "acquire error"});
    }
    // Whether `pid` had a place of `res` in the queue, or a call or hold of it, at some instant of
    // [from, to]. A place that enters the queue while its process is stopped or dead was sent
    // before: the server finishes a statement whatever became of its client, so a worker killed
    // with an enqueue in flight leaves a place that no event of its history announces.
    const auto involved = [&](const std::string& res, pid_t pid, std::int64_t from, std::int64_t to) {
      for (const auto* q : places_[res])
        if (q->pid == pid && mono_of_db(q->logged_us) <= to && from < mono_of_db(q->end_us())) return true;
      for (const auto& [p, s] : calls[res])
        if (p == pid && s.first <= to && from < s.second) return true;
      return false;
    };
    for (const auto& [res, waits] : awaited) {
      auto& ex = excuses[res];
      for (const auto& f : ev_.faults) {
        const bool pause = f.kind.rfind("pause", 0) == 0;
        // The fault's process does not run from the fault's start until its end (pauses), or ever
        // again (a kill); a session kill stops only the statements of that session.
        const std::int64_t to = f.pid != 0 ? std::max(f.end, down_until(f.pid, f.start)) : f.end;
        if (f.pid != 0 && !(pause && shared_counter) && !involved(res, f.pid, f.start, to)) continue;
        // A network fault holds the process's statements back rather than dropping them: a renewal
        // sent before it and delivered at its end keeps the place a lease longer.
        const std::int64_t until = network_fault(f.kind) ? f.end + lease : std::max(f.start + lease, f.end);
        ex.push_back({f.start, until, f.kind});
      }
      // While nobody could run (fault/stall_monitor.hpp), no hand-off can be asked of the queue.
      // Nor right after: the statements sent during a stall of d are all answered at its end and
      // compete for the same cores, so a hand-off is due a slack after end + d, the backlog drained.
      for (const auto& st : ev_.stalls) ex.push_back({st.start, st.end + (st.end - st.start), st.kind});
      std::sort(ex.begin(), ex.end(), [](const excuse& a, const excuse& b) { return a.at < b.at; });
      const auto free = minus(merged(waits), merged(busy[res]));
      for (const auto& [from, to] : free) {
        ++windows;
        longest = std::max(longest, to - from);
        // The excuses before the window that still reach into it, then those inside, in order.
        std::int64_t base = from;
        std::string why = "free";
        std::size_t k = 0;
        for (; k < ex.size() && ex[k].at <= from; ++k)
          if (ex[k].until > base) {
            base = ex[k].until;
            why = ex[k].what;
          }
        std::int64_t stalled_until = 0;
        for (; k < ex.size() && ex[k].at < to; ++k) {
          if (ex[k].at > base + slack) {
            stalled_until = ex[k].at;
            break;
          }
          if (ex[k].until > base) {
            base = ex[k].until;
            why = ex[k].what;
          }
        }
        if (!stalled_until && to > base + slack) stalled_until = to;
        handoff = std::max(handoff, std::min(to, stalled_until ? stalled_until : to) - std::min(base, to));
        if (stalled_until) {
          // Who waited then, for the post-mortem: each waiter's call, from when it was made.
          std::string who;
          for (const auto& [pid, call] : waiters[res])
            if (call.first < stalled_until && from < call.second)
              who += " " + std::to_string(pid) + "@" + at_ms(call.first, t0());
          violation("queue-stall", res + " free with live waiters from " + at_ms(from, t0()) + "; nobody held " +
                                       std::to_string((stalled_until - base) / kMs) + " ms after " + why + " (" +
                                       at_ms(base, t0()) + "); waiting (pid@call):" + who);
        }
      }
    }
    std::int64_t sent_before_down = 0;  // places that entered the queue while their process was stopped or dead
    for (const auto& [res, qs] : places_)
      for (const auto* q : qs)
        if (down_until(q->pid, mono_of_db(q->logged_us))) ++sent_before_down;
    metric("queue-places-logged-while-down", sent_before_down);
    metric("queue-stall-windows", windows);
    metric("queue-free-awaited-max-ms", longest / kMs);
    metric("queue-handoff-max-ms", handoff / kMs);
    metric("queue-stall-bound-ms", ev_.queue_stall_slack_ms);
  }

  std::int64_t t0() {
    if (t0_ == 0) t0_ = run_start(ev_.events);
    return t0_;
  }

  const run_evidence& ev_;
  report& r_;
  std::map<std::string, std::vector<const hold_rec*>> holds_;
  std::map<std::string, std::vector<const queue_log_row*>> places_;  // by ticket (the log's order)
  std::map<pid_t, std::int64_t> killed_at_;
  std::map<pid_t, std::vector<span>> paused_;
  std::map<std::pair<std::string, std::int64_t>, std::int64_t> first_reads_;
  std::int64_t stale_ = 0, overlap_max_us_ = 0, t0_ = 0;
};

}  // namespace

void check_queue(const run_evidence& ev, const std::vector<hold_rec>& holds, report& r) {
  queue_checker(ev, holds, r).run();
}

}  // namespace sqllock::fault
