// The keepalive of a session registry: one keepalive thread that schedules the pings and watches
// them, and pinger threads that send them.
//
// Why two kinds of thread: a ping on a connection whose packets are dropped (or whose server is
// frozen) blocks until TCP gives up — about 15 minutes on Linux. The thread that must notice that
// cannot be the blocked one, and every other session's pings must go on meanwhile. So the
// keepalive thread never talks to a server: it queues due pings (due_), pinger threads send them,
// and a ping still unanswered kPingTimeout after it was sent makes the keepalive thread declare
// its session lost and write off the pinger stuck in it. That pinger no longer counts: when its
// ping returns — the network or the server came back, or TCP gave up — it closes the connection
// (never giving it back to the pool: the session may still hold the locks) and exits. Whenever a
// due ping waits for a pinger, a new one is started.
//
// Nothing here asks a client library to interrupt a blocked call (Connector/C++ has no way to), so
// this works alike on every driver; the price is a thread per hung connection until it returns.
#include <algorithm>

#include "core/session/pinned_session.hpp"

#include "core/session/advisory_protocol.hpp"
#include "dialect/session_lock_sql.hpp"

namespace sqllock::detail {
namespace {

using phase = pinned_session::ping_phase;

// How soon the keepalive looks again at a session that was busy with a statement of its owner.
constexpr std::chrono::milliseconds kBusyRetry{100};

// A ping queued this long without a pinger taking it gets a new pinger: the others are stuck (in
// pings that are declared hung only later) or slow, and this session must be pinged meanwhile, or
// its own loss would be noticed late.
constexpr std::chrono::milliseconds kPickupWait{50};

// A keepalive thread that wakes this much later than it asked was not running: the process was
// stopped (SIGSTOP, a debugger, a suspended VM) or starved of CPU. A ping that looks overdue then
// may have had its answer waiting in the socket all along, with its pinger not yet run: it gets
// kLateReprieve more before it is declared hung (once per ping, so that sustained starvation cannot
// put the verdict off for ever).
constexpr std::chrono::milliseconds kLateWake{50};

// Long enough for a pinger that was stopped with the rest of the process to be scheduled again and
// read an answer already in its socket, on a loaded machine; short against the keepalive + 1 s
// bound, which a process that was not running has missed anyway.
constexpr std::chrono::milliseconds kLateReprieve{250};

}  // namespace

void session_registry::keepalive_loop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  auto planned = steady::time_point::max();  // when the last sleep was meant to end
  while (!stop.stop_requested()) {
    const auto now = clock_.now();
    const bool late = planned != steady::time_point::max() && now - planned > kLateWake;
    auto next = steady::time_point::max();
    int starved = 0;  // queued pings no pinger took in time
    std::vector<std::shared_ptr<pinned_session>> hung;
    for (const auto& [owner, s] : sessions_) {
      if (s->holds == 0 || s->loss.fired()) continue;
      switch (s->ping) {
        case phase::idle:
          if (s->next_ping > now) {
            next = std::min(next, s->next_ping);
            break;
          }
          s->ping = phase::queued;
          s->ping_since = now;
          due_.push_back(s);
          next = std::min(next, now + kPickupWait);
          break;
        case phase::queued:
          if (now - s->ping_since >= kPickupWait) {
            ++starved;
            s->ping_since = now;  // give the pinger started for it time to take it
          }
          next = std::min(next, s->ping_since + kPickupWait);
          break;
        case phase::running:
          if (now - s->ping_since < kPingTimeout) {
            next = std::min(next, s->ping_since + kPingTimeout);
          } else if (s->ping_reprieved && now < s->reprieve_end) {
            next = std::min(next, s->reprieve_end);  // woken early: the reprieve still runs
          } else if (late && !s->ping_reprieved) {
            s->ping_reprieved = true;
            s->reprieve_end = now + kLateReprieve;
            next = std::min(next, s->reprieve_end);
          } else {
            hung.push_back(s);
          }
          break;
      }
    }
    callbacks lost;
    for (const auto& s : hung) {
      auto cbs = write_off(*s);
      lost.insert(lost.end(), cbs.begin(), cbs.end());
    }
    if (!due_.empty()) {
      const int wanted = std::max(pingers_ == 0 ? 1 : 0, starved - idle_pingers_);
      for (int i = 0; i < wanted; ++i)
        if (!start_pinger()) break;  // no thread to be had now: the next pass tries again
      sync_->work.notify_all();
    }
    if (!lost.empty()) {
      lock.unlock();
      run_lost_callbacks(lost);
      lock.lock();
      planned = steady::time_point::max();  // no sleep was planned: callbacks take what they take
      continue;
    }
    // Until the next ping is due or must be checked, a session gets its first hold due earlier,
    // or the registry closes (an early wake just looks again).
    planned = next;  // a wake well past this, whatever its cause, means this thread did not run
    schedule_.sleep(clock_, sync_->changed, lock, stop, next);
  }
}

bool session_registry::start_pinger() noexcept {
  try {
    // Detached: a pinger may be written off, and then it outlives the registry.
    std::thread([this, sync = sync_] { pinger_loop(sync); }).detach();
  } catch (const std::exception&) {
    return false;
  }
  ++pingers_;
  return true;
}

bool session_registry::ping(pinned_session& s) noexcept {
  try {
    if (s.tagged) {
      // Behind a transaction-mode pooler the ping may reach another server session than the one
      // that holds the locks: then they are out of this client's reach, as good as lost.
      connection& c = **s.conn;
      const auto r = c.exec(advisory_statements(impl_.dialect()).session_is_mine, std::vector<value>{c.session_tag});
      return pg_true(r.rows.at(0).at(0));
    }
    (*s.conn)->exec_direct(keepalive_statement(impl_.dialect()));
    return true;
  } catch (...) {
    // Only a broken connection means a dead session; any other error came from a live server.
    return !(*s.conn)->broken();
  }
}

void session_registry::pinger_loop(std::shared_ptr<registry_sync> sync) noexcept {
  std::unique_lock lock(sync->mu);
  while (!closing_) {
    if (due_.empty()) {
      if (idle_pingers_ > 0) break;  // one idle pinger is enough
      ++idle_pingers_;
      sync->work.wait(lock, [&] { return closing_ || !due_.empty(); });
      --idle_pingers_;
      continue;
    }
    const auto s = std::move(due_.front());
    due_.pop_front();
    s->ping = phase::idle;
    if (s->loss.fired() || s->holds == 0) continue;
    lock.unlock();
    std::unique_lock use(s->use, std::try_to_lock);
    lock.lock();
    if (!use) {
      // A statement of the owner is running on it; a broken connection fails it at once.
      s->next_ping = clock_.now() +
                     std::min(s->keepalive, std::chrono::duration_cast<std::chrono::milliseconds>(kBusyRetry));
      reschedule(*s);
      continue;
    }
    if (!s->conn || s->loss.fired()) continue;  // went back to the pool or was lost meanwhile
    s->ping = phase::running;                   // from here the keepalive thread times it
    s->ping_since = clock_.now();
    s->ping_reprieved = false;
    lock.unlock();
    const bool alive = ping(*s);
    lock.lock();
    if (s->written_off) {
      // Declared lost while this ping hung. The registry no longer counts this thread and may be
      // gone: only `s` and `sync` may be touched now. The session may still hold its locks on the
      // server, so the connection is closed, which ends it, never pooled.
      lock.unlock();
      s->conn->close();
      s->conn.reset();
      return;
    }
    s->ping = phase::idle;
    if (alive) {
      s->next_ping = clock_.now() + s->keepalive;
      reschedule(*s);
      continue;
    }
    lock.unlock();
    auto cbs = lose(*s);
    use.unlock();
    run_lost_callbacks(cbs);
    lock.lock();
  }
  --pingers_;
  sync->changed.notify_all();  // the destructor may be waiting for the last pinger
}

callbacks session_registry::write_off(pinned_session& s) {
  s.written_off = true;
  --pingers_;  // its pinger is stuck in the ping and leaves once it returns
  return mark_lost(s);
}

void session_registry::reschedule(const pinned_session& s) {
  if (schedule_.due_before(s.next_ping)) sync_->changed.notify_all();
}

void session_registry::run_lost_callbacks(callbacks& cbs) noexcept {
  // A callback may destroy the last lock object, and with it the handle that owns this registry,
  // whose destructor would wait for this very thread (it joins the keepalive thread and waits for
  // the pingers): the handle is kept while they run and let go on a short-lived thread.
  run_callbacks_keeping(cbs, impl_.keep_alive());
}

}  // namespace sqllock::detail
