#include "fault/checker.hpp"

#include "fault/guard_check.hpp"
#include "fault/hold_story.hpp"
#include "fault/holds.hpp"
#include "fault/latch_check.hpp"
#include "fault/multi_check.hpp"
#include "fault/queue_check.hpp"
#include "fault/spans.hpp"
#include "fault/told_check.hpp"

#include "core/session/pinned_session.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>
#include <vector>

namespace sqllock::fault {
namespace {

constexpr std::int64_t kMs = 1'000'000;  // nanoseconds per millisecond

class checker {
 public:
  explicit checker(const run_evidence& ev) : ev_(ev), holds_(build_holds(ev.events, ev.workers)) {
    for (const char* v :
         {"server-overlap", "fence-order", "foreign-delete", "unknown-fence", "reentry-fence", "lost-write",
          "phantom-write", "stale-write", "client-overlap", "lost-signal-late", "liveness", "row-atomicity"})
      r_.violations[v] = 0;
    if (ha_ || queued_) r_.violations["fence-causal"] = 0;
    if (semaphore_)
      for (const char* v : {"server-overcommit", "slot-fence-order"}) r_.violations[v] = 0;
    if (failover_)
      for (const char* v : {"failover-liveness", "failover-lost-signal"}) r_.violations[v] = 0;
  }

  report run() {
    volume();
    if (leased(ev_.cfg.kind) && !queued_) {  // table locks; semaphores per (name, slot)
      server_grants();
      client_fences(granted_in(ev_.grants));
      stale_writes();
      if (ha_) fence_causal();
    }
    if (queued_) {  // fair and rw: each hold's ticket is its fence, each place a row of the queue log
      queue_places();
      client_fences(granted_in(ev_.queue_log));
      stale_writes();
      fence_causal();
      check_queue(ev_, holds_, r_);
    }
    if (semaphore_) server_overcommit();
    if (ev_.cfg.kind == lock_kind::latch) check_latch(ev_, r_);
    if (ev_.cfg.kind == lock_kind::multi) check_multi(ev_, r_);
    counters();
    client_overlaps();
    if (ev_.cfg.kind != lock_kind::latch) check_told(ev_, holds_, r_);
    if (leased(ev_.cfg.kind)) check_guarded(ev_, holds_, r_);
    lost_signals();
    liveness();
    stalls();
    if (failover_) failovers();
    return r_;
  }

 private:
  void violation(const std::string& name, const std::string& what) { r_.add_violation(name, what); }
  void metric(const std::string& name, std::int64_t v) { r_.metrics[name] = v; }
  void bump(const std::string& name, std::int64_t by = 1) { r_.metrics[name] += by; }

  static std::string when(std::int64_t ns, std::int64_t t0) { return at_ms(ns, t0); }
  std::int64_t t0() const { return run_start(ev_.events); }
  std::string describe(const hold_rec& h) const { return describe_hold(h, t0()); }

  void volume() {
    metric("grants", static_cast<std::int64_t>(holds_.size()));
    for (const auto& h : holds_) {
      bump("fenced-write-" + (h.fenced.empty() ? std::string("none") : h.fenced));
      bump("release-" + (h.release.empty() ? std::string("died") : h.release));
      if (h.lost_at) bump("lost-signals");
      if (!h.reentries.empty()) bump("reentrant-grants");
    }
    for (const auto& e : ev_.events)
      if (e.type == 'T') bump("acquire-errors");
    metric("worker-processes", static_cast<std::int64_t>(ev_.workers.size()));
  }

  // Tier 1: the server's own record of table_lock grants.
  void server_grants() {
    std::map<std::pair<std::string, std::int64_t>, std::vector<const hold_rec*>> by_grant;
    for (const auto& h : holds_) by_grant[{h.res, h.fence}].push_back(&h);
    std::string res;
    // Grants come in the order their rows were written (logged_at): writes of one resource's row
    // wait for each other, so that is the order they took effect. A later grant may follow an
    // earlier one in two ways: by the acquire's own expiry test — its clock reading (granted_at)
    // is past the earlier lease — or after the earlier row was deleted — it was logged after the
    // DELETE (its acquire may have read its clock, and drawn its fence, and then waited for the
    // DELETE to commit: on a stalled Galera cluster for many seconds, so a grant can carry a
    // clock reading from before an earlier lease's end and still come after its deletion). A
    // deleted grant allows either; one that was never deleted only the first.
    std::int64_t max_expiry = 0, prev_fence = 0, max_overlap_us = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> deleted;  // this resource's (expiry, deletion)
    for (const auto& g : ev_.grants) {
      if (g.resource != res) {
        res = g.resource;
        max_expiry = 0;  // times are µs since 1970: 0 is before any grant
        deleted.clear();
        prev_fence = std::numeric_limits<std::int64_t>::min();
      }
      std::int64_t overlap = max_expiry - g.granted_us;
      for (const auto& [expiry, deletion] : deleted)
        overlap = std::max(overlap, std::min(expiry - g.granted_us, deletion - g.logged_us));
      if (overlap > 0) {
        max_overlap_us = std::max(max_overlap_us, overlap);
        violation("server-overlap", res + " fence " + std::to_string(g.fence) + " granted " + std::to_string(overlap) +
                                        " us before the previous grant ended");
      }
      if (g.fence <= prev_fence)
        violation(semaphore_ ? "slot-fence-order" : "fence-order",
                  res + " fence " + std::to_string(g.fence) + " granted after fence " + std::to_string(prev_fence));
      if (g.deleted_us)
        deleted.emplace_back(g.expires_us, *g.deleted_us);
      else
        max_expiry = std::max(max_expiry, g.expires_us);
      prev_fence = std::max(prev_fence, g.fence);
      if (g.deleted_us && *g.deleted_us < g.expires_us &&
          !early_delete(by_grant, g.resource, g.fence, *g.deleted_us, g.expires_us))
        bump("grants-without-client");  // liveness probes; acquires whose reply was lost (sqllock deletes those)
    }
    metric("server-grants", static_cast<std::int64_t>(ev_.grants.size()));
    metric("server-overlap-max-us", max_overlap_us);
  }

  using holds_index = std::map<std::pair<std::string, std::int64_t>, std::vector<const hold_rec*>>;

  // A row of `res` with `fence` (a lock grant, a permit, a place in the queue) deleted at
  // `deleted_us`, before its expiry `expires_us`: a foreign-delete unless one of its holds released
  // it (or was releasing it when its process died) or had been told of the loss before. False
  // when no hold had it.
  bool early_delete(const holds_index& by_grant, const std::string& res, std::int64_t fence, std::int64_t deleted_us,
                    std::int64_t expires_us) {
    const auto it = by_grant.find({res, fence});
    if (it == by_grant.end()) return false;
    // The holder's handle also deletes the row of a hold it declared lost (renew_once's orphan
    // cleanup, or its next acquire of the resource): a delete after the holder was told.
    const std::int64_t deleted_mono = deleted_us * 1000 - ev_.realtime_minus_mono_ns;
    bool own = false, orphan = false;
    for (const hold_rec* h : it->second) {
      own = own || h->release == "ok" || h->release == "unk" || h->release == "err" ||
            (h->releasing && h->release.empty()) || set_release_deleted(*h, deleted_mono);
      orphan = orphan || told_lost_before(*h, deleted_mono);
    }
    if (!own && orphan) bump("early-deletes-of-lost-holds");
    own = own || orphan;
    if (!own)
      violation("foreign-delete", describe(*it->second.front()) + ": row deleted " +
                                      std::to_string((expires_us - deleted_us) / 1000) +
                                      " ms before expiry; holder's release said " + it->second.front()->release);
    return true;
  }

  // The queue's places: one deleted before its lease ran out must have been its holder's to
  // delete (foreign-delete); those that never held were waiters leaving (timeouts, errors).
  void queue_places() {
    holds_index by_place;
    for (const auto& h : holds_) by_place[{h.res, h.fence}].push_back(&h);
    for (const auto& q : ev_.queue_log)
      if (q.end_event == 'D' && q.ended_us && *q.ended_us < q.expires_us &&
          !early_delete(by_place, q.resource, q.ticket, *q.ended_us, q.expires_us))
        bump("queue-places-left-early-unheld");
  }

  // Semaphores: never more than N live permits of a name by the server's log. A permit is live
  // from when its grant was logged (the row written: after any wait of the acquire, so after the
  // DELETE of the slot's previous permit) until its DELETE was logged or its lease ran out,
  // whichever came first; at equal times an end comes before a start. Each grant that makes a
  // name's live permits exceed N counts once.
  void server_overcommit() {
    std::map<std::string, std::vector<std::pair<std::int64_t, int>>> edges;  // name -> (µs, +1 | -1)
    for (const auto& g : ev_.grants) {
      const std::int64_t end = g.deleted_us ? std::min(g.expires_us, *g.deleted_us) : g.expires_us;
      if (end <= g.logged_us) continue;  // over before it was written: live at no instant
      edges[g.name].emplace_back(g.logged_us, 1);
      edges[g.name].emplace_back(end, -1);
    }
    std::int64_t most = 0;
    for (auto& [name, es] : edges) {
      std::sort(es.begin(), es.end());
      std::int64_t live = 0;
      for (const auto& [at, delta] : es) {
        live += delta;
        most = std::max(most, live);
        if (delta > 0 && live > ev_.cfg.permits)
          violation("server-overcommit", name + ": " + std::to_string(live) + " live permits of " +
                                             std::to_string(ev_.cfg.permits) + " at " + std::to_string(at) + " us");
      }
    }
    metric("server-permits-max-live", most);
  }

  // How far the database clock's log times may lag the histories' clock (SQLite: whole ms,
  // truncated; the servers log microseconds).
  std::int64_t db_clock_resolution() const { return ev_.cfg.dialect == dialect_kind::sqlite ? kMs : 0; }

  // Whether the DELETE at `at` was the release of `h`'s set, which said not_held. A multi_lock's
  // release deletes the names it still holds and then reports not_held when another name of the
  // set was lost first — by a take-over, or by its local deadline passing while the release ran
  // (a set granted after a long lock wait keeps little of its lease). The worker records the
  // set's one outcome for every name, so a delete during that release call (between its Y and X,
  // on the histories' clock) is the holder's own.
  bool set_release_deleted(const hold_rec& h, std::int64_t at) const {
    return ev_.cfg.kind == lock_kind::multi && h.release == "notheld" && h.releasing &&
           h.end < at + db_clock_resolution() && at <= h.release_at;
  }

  // Whether `h`'s holder had been told it lost the hold before `at` (the row's DELETE, on the
  // histories' clock): by a lost signal — written inside the library's lose(), so before any
  // orphan cleanup of that hold — or by a release that reported the loss (the next acquire of the
  // same thread deletes a lost hold's live row only after that). No slack beyond the database
  // clock's resolution (SQLite: whole ms, truncated): an unsafe peer's DELETE is typically
  // followed within a millisecond or two by its victim's failed release, and must still count.
  bool told_lost_before(const hold_rec& h, std::int64_t at) const {
    const std::int64_t resolution = db_clock_resolution();
    const bool release_said = h.release == "notheld" || h.release == "lost";
    return (h.lost_at && h.lost_at < at + resolution) || (release_said && h.release_at < at + resolution);
  }

  // The (resource, fence) of every row in a server log: grants (fence), places (ticket).
  static std::set<std::pair<std::string, std::int64_t>> granted_in(const std::vector<grant_row>& log) {
    std::set<std::pair<std::string, std::int64_t>> out;
    for (const auto& g : log) out.emplace(g.resource, g.fence);
    return out;
  }
  static std::set<std::pair<std::string, std::int64_t>> granted_in(const std::vector<queue_log_row>& log) {
    std::set<std::pair<std::string, std::int64_t>> out;
    for (const auto& q : log) out.emplace(q.resource, q.ticket);
    return out;
  }

  void client_fences(const std::set<std::pair<std::string, std::int64_t>>& granted) {
    for (const auto& h : holds_) {
      if (h.fence >= 0 && !granted.count({h.res, h.fence}))
        violation("unknown-fence", describe(h) + " has no grant in the server log");
      for (const auto& [at, inner] : h.reentries) {
        if (inner == -2) bump("reentry-refused");
        if (inner < 0) continue;
        if (inner != h.fence && (h.lost_at == 0 || h.lost_at > at))
          violation("reentry-fence", describe(h) + " re-entered with fence " + std::to_string(inner));
      }
    }
  }

  // A fenced write accepted although a write with a higher fence had already completed.
  void stale_writes() {
    std::map<std::string, std::vector<const hold_rec*>> accepted;
    for (const auto& h : holds_)
      if (h.fenced == "ok" && h.fence >= 0) accepted[h.res].push_back(&h);
    for (auto& [res, ws] : accepted) {
      std::sort(ws.begin(), ws.end(), [](auto* a, auto* b) { return a->fenced_done < b->fenced_done; });
      std::vector<std::int64_t> prefix_max;
      for (const auto* w : ws) prefix_max.push_back(std::max(prefix_max.empty() ? -1 : prefix_max.back(), w->fence));
      for (const auto* w : ws) {
        const auto n = std::lower_bound(ws.begin(), ws.end(), w->fenced_sent,
                                        [](auto* a, std::int64_t t) { return a->fenced_done < t; }) -
                       ws.begin();
        if (n > 0 && prefix_max[static_cast<std::size_t>(n - 1)] > w->fence)
          violation("stale-write", describe(*w) + " accepted after fence " +
                                       std::to_string(prefix_max[static_cast<std::size_t>(n - 1)]));
      }
    }
  }

  void counters() {
    // A process killed inside a section may have sent (even committed) a write it never
    // recorded: such sections count as indeterminate for both counters.
    std::map<std::string, std::int64_t> f_ok, f_unk, u_ok, u_unk;
    for (const auto& h : holds_) {
      if (h.fenced == "ok") ++f_ok[h.res];
      if (!h.writer) continue;  // a read hold writes nothing
      if (h.fenced == "unk" || (h.release.empty() && h.fenced.empty())) ++f_unk[h.res];
      if (h.release.empty()) ++u_unk[h.res];
    }
    for (const auto& e : ev_.events) {
      if (e.type != 'U' || e.fields.empty()) continue;
      if (e.fields[0] == "ok") ++u_ok[e.resource];
      if (e.fields[0] == "unk") ++u_unk[e.resource];
    }
    std::int64_t lost_updates = 0;
    for (const auto& d : ev_.data) {
      const auto ok = f_ok[d.resource], unk = f_unk[d.resource];
      if (d.v < ok)
        violation("lost-write", d.resource + ": v = " + std::to_string(d.v) + " < " + std::to_string(ok) + " accepted");
      if (d.v > ok + unk)
        violation("phantom-write", d.resource + ": v = " + std::to_string(d.v) + " > " + std::to_string(ok + unk));
      lost_updates += std::max<std::int64_t>(0, u_ok[d.resource] - d.u);
      if (ev_.cfg.kind == lock_kind::row && (d.u < u_ok[d.resource] || d.u > u_ok[d.resource] + u_unk[d.resource]))
        violation("row-atomicity",
                  d.resource + ": u = " + std::to_string(d.u) + ", committed " + std::to_string(u_ok[d.resource]));
    }
    metric("unfenced-lost-updates", lost_updates);
  }

  // The fault (if any) that explains why `stale` could still be inside its section.
  //
  // SQLite has one writer: a process paused inside a write transaction (an acquire, a renewal, a
  // fenced write) stalls every other process's writes, renewals included, so any holder's lease
  // can run out while it waits, blocked inside its section. There a long pause of any process
  // explains an overlap; on a server only a pause of the stale holder itself does.
  //
  // A session lock's keepalive declares a session lost when its ping has not answered within
  // kPingTimeout (src/core/session/pinned_session.hpp, 800 ms); a long pause (≥ 1.5 L = 3 s) can outlast
  // that even with the late-wake reprieve, and the written-off connection is then closed, which
  // frees the lock while the resumed holder is still in its section. That is the contract working
  // (the loss was reported: the lost signal fired), not a violation; without the signal it is one.
  // On MariaDB a pause as long as the server's own dead-peer limit ends the session outright
  // (ends_silent_sessions), also before the resumed holder's keepalive could say so.
  // A network partition or stall of the holder's lock connections (net-partition, net-stall) does
  // the same to a session lock: the ping gets no answer. For leased kinds a partition (1.5 L)
  // outlasts the lease like a long pause, while the holder runs on (lost signals are recorded, not
  // obeyed); any other network fault of the holder — for a session lock too — explains an overlap
  // only when the holder was told before the other entered (told-before-granted checks that for
  // every grant).
  // Whether the server ends a session that stays silent for server_dead_peer_limit (sqllock sets
  // MariaDB's session wait_timeout to it, core/session/pinned_session.hpp). A stopped process cannot ping:
  // a pause that long ends its session and frees its locks — as the lease of a paused holder runs
  // out — and the holder hears of it only when it runs again. On PostgreSQL the limit is TCP
  // keepalive, which a paused process's kernel still answers.
  bool ends_silent_sessions() const { return ev_.cfg.dialect == dialect_kind::mysql; }

  std::string explanation(const hold_rec& stale, std::int64_t entered) const {
    const bool lease = leased(ev_.cfg.kind);
    const bool signalled = ev_.cfg.kind == lock_kind::advisory || ev_.cfg.kind == lock_kind::named;
    const bool one_writer = ev_.cfg.dialect == dialect_kind::sqlite;
    for (const auto& f : ev_.faults) {
      if (f.start > stale.end || f.end < stale.called) continue;
      const bool long_pause = f.kind == "pause-long" || f.kind == "pause-xlong";
      if (f.pid == 0) return f.kind;  // a server fault: restart, kill-primary, rejoin, kill-node
      if (lease && one_writer && long_pause) return f.kind + "-of-a-writer";
      // A process paused inside a transaction keeps its row locks, and a handle renews all its
      // leases in one statement: one row it waits for lets every lease of that handle lapse. A
      // holder told of it (at its local deadline) before the other entered is the contract kept:
      // workers run on after the signal on purpose, and the fence guards the data.
      if (lease && long_pause && f.pid != stale.pid && stale.lost_at != 0 && stale.lost_at <= entered)
        return f.kind + "-of-another-told-in-time";
      if (f.pid != stale.pid) continue;
      if (lease && (long_pause || f.kind == "net-partition")) return f.kind;
      // Steady latency, retransmission-like stalls or a stall of the holder's own lock connections
      // can make its renewals too late under load (each costs several delayed round trips), or its
      // keepalive ping later than the verdict (a session lock's connection is then written off and
      // closed, which frees the lock); told before the other entered, it kept the contract.
      if ((lease || signalled) && network_fault(f.kind) && stale.lost_at != 0 && stale.lost_at >= f.start &&
          stale.lost_at <= entered)
        return f.kind + "-told-in-time";
      if (!lease && f.kind == "session-kill") return f.kind;
      const bool cut_off = long_pause || f.kind == "net-partition" || f.kind == "net-stall";
      if (signalled && cut_off && stale.lost_at >= f.start) return f.kind + "-session-written-off";
      if (signalled && long_pause && ends_silent_sessions() &&
          f.end - f.start >=
              std::chrono::nanoseconds(sqllock::detail::server_dead_peer_limit(ev_.cfg.keepalive)).count())
        return f.kind + "-past-server-limit";
    }
    // Whatever made the lease (or the session) lapse — above, the faults that explain it; here none:
    // a machine so loaded that a renewal or ping came too late — a holder told before the other
    // entered kept the contract (told-before-granted checks every grant). Counted apart, so that
    // runs full of them show.
    if ((lease || signalled) && stale.lost_at != 0 && stale.lost_at <= entered) return "no-fault-told-in-time";
    return "";
  }

  // Tier 3: critical sections that overlapped by the common monotonic clock.
  void client_overlaps() {
    std::map<std::string, std::vector<const hold_rec*>> by_res;
    for (const auto& h : holds_) by_res[h.res].push_back(&h);
    std::int64_t max_ns = 0;
    for (auto& [res, hs] : by_res) {
      std::sort(hs.begin(), hs.end(), [](auto* a, auto* b) { return a->start < b->start; });
      std::vector<const hold_rec*> active;
      for (const hold_rec* h : hs) {
        std::erase_if(active, [&](const hold_rec* a) { return a->end <= h->start; });
        for (const hold_rec* stale : active) {
          if (!stale->writer && !h->writer) continue;  // read holds share the lock
          max_ns = std::max(max_ns, std::min(stale->end, h->end) - h->start);
          const std::string in_flight = ended_in_flight(ev_, *h);
          const std::string why = in_flight.empty() ? explanation(*stale, h->start) : in_flight;
          if (why.empty()) {
            violation("client-overlap", describe(*stale) + " still inside when " + describe(*h) +
                                            " entered; the first: " + hold_story(*stale, ev_.faults, t0()) +
                                            "; the second: " + hold_story(*h, ev_.faults, t0()));
            continue;
          }
          bump("overlaps-explained-by-" + why);
          if (stale->fenced == "rej") bump("overlaps-stale-write-rejected");
        }
        active.push_back(h);
      }
    }
    metric("client-overlap-max-ms", max_ns / kMs);
  }

  // After a session kill, the holder must learn of the loss within keepalive + 1 s.
  //
  // The histories do not say which thread's session was killed, only its process. The nemesis
  // looked for lock-holding sessions from found_at, and killed one between f.start and f.end. A
  // hold's start (A) is written after the server granted it, so the times bound the victim only
  // through the acquire call's start (called): the session held, when seen, the lock of a hold of
  // that process whose call began before f.start. Either that hold's release began before the kill
  // ended and had not finished when the look began ("raced": the kill may have hit a session that
  // had just let go, so there was nothing to learn), or that hold was still in its section after
  // f.end. So unless raced, the victim is among the candidates — holds of the process whose call
  // began by f.end and still inside after f.end (some may have been granted after the kill, on
  // another session: they only add chances to learn) — and some candidate must learn: a lost
  // signal, a release that did not succeed, or an acquire of the process failing (T: a grant the
  // killed session answered too late for a hold to begin).
  void lost_signals() {
    if (ev_.cfg.kind != lock_kind::advisory && ev_.cfg.kind != lock_kind::named && ev_.cfg.kind != lock_kind::row)
      return;
    const std::int64_t bound = ev_.lost_signal_bound_ms * kMs;
    std::int64_t worst = 0;
    for (const auto& f : ev_.faults) {
      if (f.kind != "session-kill") continue;
      bool disturbed = false;  // paused or crashed before it could notice
      for (const auto& g : ev_.faults)
        if (&g != &f && (g.pid == f.pid || g.pid == 0) && g.start < f.end + bound && g.end >= f.start) disturbed = true;
      std::int64_t learned = std::numeric_limits<std::int64_t>::max();
      bool holding = false, raced = false;
      for (const auto& h : holds_) {
        if (h.pid != f.pid) continue;
        if (h.called <= f.start && h.releasing && h.end <= f.end && (h.release_at == 0 || h.release_at >= f.found_at))
          raced = true;
        if (h.called > f.end || h.end <= f.end) continue;
        holding = true;
        if (h.lost_at >= f.start) learned = std::min(learned, h.lost_at);
        if (h.release_at && h.release != "ok") learned = std::min(learned, h.release_at);
      }
      for (const auto& e : ev_.events)
        if (e.pid == f.pid && e.type == 'T' && e.mono >= f.start) learned = std::min(learned, e.mono);
      if (!holding || raced || disturbed) {
        bump("session-kills-unchecked");
        continue;
      }
      bump("session-kills-checked");
      // A holder may learn before kill_session returns (f.end): that is latency 0, not "never".
      const std::int64_t latency = learned == std::numeric_limits<std::int64_t>::max()
                                       ? -1
                                       : std::max<std::int64_t>(0, learned - f.end);
      worst = std::max(worst, latency);
      // Row locks have no loss signal: their holder learns at its next statement or COMMIT.
      if (ev_.cfg.kind == lock_kind::row) continue;
      if (latency < 0 || latency > bound)
        violation("lost-signal-late", "session " + std::to_string(f.session) + " of pid " + std::to_string(f.pid) +
                                          " killed at " + when(f.end, t0()) + "; learned after " +
                                          (latency < 0 ? std::string("never") : std::to_string(latency / kMs) + " ms"));
    }
    metric("session-kill-learned-max-ms", worst / kMs);
  }

  // The probes' waits, less the time within each that nobody could run (fault/stall_monitor.hpp).
  void liveness() {
    std::int64_t worst = 0, stalled_max = 0;
    for (const auto& l : ev_.liveness) {
      worst = std::max(worst, l.waited_ms);
      const std::int64_t stalled = l.waited_ms < 0 ? 0 : stalled_within(ev_.liveness_from, l.waited_ms * kMs) / kMs;
      stalled_max = std::max(stalled_max, stalled);
      if (l.waited_ms < 0 || l.waited_ms - stalled > ev_.liveness_bound_ms)
        violation("liveness", l.resource + " acquired after " + std::to_string(l.waited_ms) + " ms, " +
                                  std::to_string(stalled) + " ms of it stalled (bound " +
                                  std::to_string(ev_.liveness_bound_ms) + " ms)");
    }
    metric("liveness-max-ms", worst);
    metric("liveness-stalled-max-ms", stalled_max);
  }

  // How much of [from, from + wait) the stalls cover (their union), each stall of d counted until
  // d past its end: what was sent during it is answered together at its end, and the backlog
  // competes for the same cores (the rule queue-stall applies, fault/queue_check.cpp).
  std::int64_t stalled_within(std::int64_t from, std::int64_t wait) const {
    std::vector<span> stalls;
    for (const auto& st : ev_.stalls) stalls.emplace_back(st.start, st.end + (st.end - st.start));
    return wait - length(minus({{from, from + wait}}, merged(std::move(stalls))));
  }

  void stalls() {
    for (const char* kind : {"machine-stall", "server-stall"}) {
      std::int64_t n = 0, longest = 0, total = 0;
      for (const auto& st : ev_.stalls)
        if (st.kind == kind) {
          ++n;
          longest = std::max(longest, st.end - st.start);
          total += st.end - st.start;
        }
      metric(std::string(kind) + "s", n);
      metric(std::string(kind) + "-max-ms", longest / kMs);
      metric(std::string(kind) + "-total-ms", total / kMs);
    }
  }

  // Fences in the order the clients saw grants happen: a hold whose acquire call began after
  // another hold of the resource was granted (its A) must have the higher fence. The server's
  // log (fence-order) has only the grants the surviving node kept; this also covers any grant a
  // failover lost. A fence of the same thread's earlier hold is that thread's own grant taken
  // again (re-entry of a row or place its failed release left, which a queue's ticket names
  // uniquely), not a new grant.
  void fence_causal() {
    std::map<std::string, std::vector<const hold_rec*>> by_res;
    for (const auto& h : holds_)
      if (h.fence >= 0) by_res[h.res].push_back(&h);
    for (auto& entry : by_res) {
      auto& hs = entry.second;  // a plain reference: the lambda below captures it
      const auto own_earlier = [&](const hold_rec& h) {
        return std::any_of(hs.begin(), hs.end(), [&](const hold_rec* e) {
          return e->pid == h.pid && e->thread == h.thread && e->fence == h.fence && e->start < h.start &&
                 e->release != "ok";
        });
      };
      std::sort(hs.begin(), hs.end(), [](auto* a, auto* b) { return a->start < b->start; });
      std::vector<const hold_rec*> top;  // top[n]: the highest fence among hs[0..n]
      for (const auto* h : hs) top.push_back(top.empty() || h->fence > top.back()->fence ? h : top.back());
      for (const auto* h : hs) {
        const auto n = std::lower_bound(hs.begin(), hs.end(), h->called,
                                        [](auto* a, std::int64_t t) { return a->start < t; }) -
                       hs.begin();
        if (n == 0) continue;
        const hold_rec* before = top[static_cast<std::size_t>(n - 1)];
        if (before->fence < h->fence) continue;
        if ((before->fence == h->fence && before->pid == h->pid && before->thread == h->thread) || own_earlier(*h)) {
          bump("fence-causal-same-grant");
          continue;
        }
        violation("fence-causal", describe(*h) + " called at " + when(h->called, t0()) + ", after " +
                                      describe(*before) + " was granted");
      }
    }
  }

  // kill-primary (pg_auto_failover): the failover's length (the kill until the promoted standby
  // accepted a write); every resource granted to a worker again within failover + L + 1 s of
  // that; every holder inside its section at the kill told of the loss within the bound.
  void failovers() {
    std::int64_t run_end = 0;  // the last fault: every worker killed
    for (const auto& w : ev_.workers) run_end = std::max(run_end, w.killed_at);
    std::int64_t kills = 0, longest = 0, shortest = std::numeric_limits<std::int64_t>::max(), worst_gap = 0,
                 worst_told = 0;
    const std::int64_t told_bound = ev_.failover_signal_bound_ms * kMs;
    for (const auto& f : ev_.faults) {
      if (f.kind != "kill-primary") continue;
      ++kills;
      const std::int64_t failover = f.end - f.start, bound = failover + ev_.failover_slack_ms * kMs;
      longest = std::max(longest, failover);
      shortest = std::min(shortest, failover);
      for (int i = 0; i < ev_.cfg.resources; ++i) {
        const std::string res = resource_name(i);
        std::int64_t first = std::numeric_limits<std::int64_t>::max();
        for (const auto& h : holds_)
          if (h.res == res && h.called > f.start) first = std::min(first, h.start);
        if (first == std::numeric_limits<std::int64_t>::max() && run_end && run_end < f.end + bound) {
          bump("failover-liveness-unchecked");  // the run ended first
          continue;
        }
        const std::int64_t gap = first == std::numeric_limits<std::int64_t>::max()
                                     ? -1
                                     : std::max<std::int64_t>(0, first - f.end);
        worst_gap = std::max(worst_gap, gap);
        if (gap < 0 || gap > bound)
          violation("failover-liveness",
                    res + " not granted within " + std::to_string(bound / kMs) + " ms of the failover ending at " +
                        when(f.end, t0()) +
                        (gap < 0 ? std::string(" (never)") : "; after " + std::to_string(gap / kMs) + " ms"));
      }
      if (ev_.cfg.kind == lock_kind::row) continue;  // no loss signal: told at the next statement
      for (const char* m : {"failover-holders", "failover-holders-told", "failover-holders-untold-ended-in-time"})
        bump(m, 0);
      for (const auto& h : holds_) {
        if (h.start > f.start || h.end <= f.start) continue;
        bump("failover-holders");
        std::int64_t told = h.lost_at ? h.lost_at : std::numeric_limits<std::int64_t>::max();
        if (!h.release.empty() && h.release != "ok") told = std::min(told, h.release_at);
        if (told != std::numeric_limits<std::int64_t>::max()) {
          const std::int64_t latency = std::max<std::int64_t>(0, told - f.start);
          worst_told = std::max(worst_told, latency);
          bump("failover-holders-told");
          if (latency > told_bound)
            violation("failover-lost-signal", describe(h) + " told " + std::to_string(latency / kMs) +
                                                  " ms after the kill at " + when(f.start, t0()));
          continue;
        }
        bool disturbed = false;  // paused or crashed before it was due to learn
        for (const auto& g : ev_.faults)
          if (g.pid == h.pid && g.start < f.start + told_bound && g.end >= f.start) disturbed = true;
        if (disturbed || h.end < f.start + told_bound) {
          bump("failover-holders-untold-ended-in-time");  // its section ended before the bound
          continue;
        }
        violation("failover-lost-signal", describe(h) + " kept holding after the kill at " + when(f.start, t0()) +
                                              " without a lost signal; release said " + h.release);
      }
    }
    if (kills == 0) return;
    metric("failover-kills", kills);
    metric("failover-max-ms", longest / kMs);
    metric("failover-min-ms", shortest / kMs);
    metric("failover-liveness-max-ms", worst_gap / kMs);
    metric("failover-liveness-bound-ms", (longest / kMs) + ev_.failover_slack_ms);
    if (ev_.cfg.kind != lock_kind::row) metric("failover-told-max-ms", worst_told / kMs);
  }

  const run_evidence& ev_;
  const bool ha_ = ev_.cfg.setup != setup_kind::standalone;
  const bool failover_ = ev_.cfg.setup == setup_kind::pgaf;
  const bool semaphore_ = ev_.cfg.kind == lock_kind::semaphore;
  const bool queued_ = queued(ev_.cfg.kind);
  std::vector<hold_rec> holds_;
  report r_;
};

}  // namespace

void report::add_violation(const std::string& name, const std::string& what) {
  ++violations[name];
  if (examples.size() < 20) examples.push_back(name + ": " + what);
}

std::int64_t report::total_violations() const {
  std::int64_t n = 0;
  for (const auto& [k, v] : violations) n += v;
  return n;
}

report check(const run_evidence& ev) { return checker(ev).run(); }

report check_refusal(const run_evidence& ev) {
  report r;
  r.violations["refusal-missing"] = 0;
  const std::string prefix = "refusal-" + to_string(ev.cfg.kind) + "-threads-";
  for (const char* m : {"refused", "granted", "undecided"}) r.metrics[prefix + m] = 0;
  std::map<std::pair<pid_t, int>, std::string> verdict;  // first grant or refusal of each thread
  for (const auto& e : ev.events) {
    if (e.type == 'A') verdict.emplace(std::pair{e.pid, e.thread}, "granted");
    if (e.type == 'T' && !e.fields.empty() && e.fields[0] == "not_supported")
      verdict.emplace(std::pair{e.pid, e.thread}, "refused");
  }
  for (const auto& w : ev.workers) {
    int refused = 0;
    for (int t = 0; t < ev.cfg.threads; ++t) {
      const auto it = verdict.find({w.pid, t});
      const std::string v = it == verdict.end() ? "undecided" : it->second;
      ++r.metrics[prefix + v];
      refused += v == "refused" ? 1 : 0;
    }
    if (refused == ev.cfg.threads) continue;
    if (++r.violations["refusal-missing"] <= 20)
      r.examples.push_back("refusal-missing: " + to_string(ev.cfg.kind) + " worker " + std::to_string(w.pid) +
                           " (slot " + std::to_string(w.slot) + "): " + std::to_string(refused) + " of " +
                           std::to_string(ev.cfg.threads) + " threads refused");
  }
  r.metrics["refusal-" + to_string(ev.cfg.kind) + "-worker-processes"] = static_cast<std::int64_t>(ev.workers.size());
  return r;
}

}  // namespace sqllock::fault
