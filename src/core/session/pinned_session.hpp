// Pinned sessions: the database sessions that hold session-level locks (PostgreSQL advisory
// locks, MySQL GET_LOCK), and the keepalive that notices when one dies.
//
// A session-level lock lives exactly as long as the database session that took it, so the
// connection is taken out of the pool ("pinned") while an owner holds any such lock and goes back
// once it holds none. One owner (a thread, or an explicit owner key) has at most one live session
// per handle: all its advisory/named locks share it, so re-entry across lock objects works the way
// the server counts it.
//
// A dead session frees its locks on the server at once, but an idle client finds out only when it
// next talks (TCP keepalives alone take minutes). So every session that holds locks is pinged
// every `keepalive` period. A dead session shows in one of two ways: the ping fails because the
// connection broke (the server killed the session or closed the socket), or the ping does not
// answer at all (packets are dropped, the server is frozen) — then nothing fails until TCP gives
// up, about 15 minutes later on Linux. Either way the session is marked lost: its loss_signal
// fires (stop token, on_lost callbacks), and its connection never goes back to the pool. A session
// whose statement fails because the connection broke is lost the same way.
//
// The registry belongs to its handle's database_impl (database_impl::sessions()), one per process,
// and reads time from the handle's clock, so unit tests run the keepalive on a fake one.
//
// Threads (see session_keepalive.cpp): the keepalive thread of a registry never talks to a
// server. It hands due pings to pinger threads and declares lost any session whose ping has not
// answered kPingTimeout after it started; the pinger stuck in that ping is written off (it closes
// the connection and exits whenever the ping returns) and the others keep pinging every other
// session. Owners waiting for a session's `use` give up as soon as it is lost (lock_use), so an
// unlock never waits on a hung connection.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/handle/clock.hpp"
#include "core/handle/database_impl.hpp"
#include "core/hold/loss_signal.hpp"
#include "sqllock/database.hpp"

namespace sqllock::detail {

// A ping that has not answered this long after it was sent finds a dead connection (dropped
// packets or a frozen server): `SELECT 1` takes a round trip, not most of a second — though on a
// loaded machine (CI: two cores, sanitizers) a reply can be late by a few hundred ms, and a false
// loss stops the holder's work. Together with the keepalive period it is the detection bound the
// contract promises (keepalive + 1 s), with 200 ms to spare for scheduling delays.
inline constexpr std::chrono::milliseconds kPingTimeout{800};

// How long the server may keep the session of a holder that went silent before it ends it (and
// frees its locks), for a session pinged every `keepalive`: the holder's own verdict comes within
// keepalive + kPingTimeout of its last answered ping, and the server must not free the lock
// before that — or another process takes it while the holder still thinks it holds it. So the
// limit is that verdict plus a margin of one more keepalive period and 1.2 s (a ping scheduled
// or picked up late, a loaded machine), in whole seconds, rounded up: 2 × keepalive + 2 s, e.g.
// 12 s for the default 5 s keepalive, 3 s for 300 ms. dialect/session_lock_sql.hpp
// (dead_peer_limit_statements) turns it into server settings.
std::chrono::seconds server_dead_peer_limit(std::chrono::milliseconds keepalive) noexcept;

struct pinned_session {
  pinned_session(std::string owner_key, pooled_connection c, std::chrono::milliseconds keepalive_period);

  const std::string owner;  // "t:<thread id>", "k:<owner key>" or "x:<n>" (a private transaction)
  const pid_t pid;          // the process that opened it; a forked child must not touch it

  // Held while a statement runs on `conn`: by lock operations and by a ping. Timed, so that a
  // bounded acquire does not wait past its deadline for another user. Take it with
  // session_registry::lock_use: a ping stuck on a dead network holds it until TCP gives up.
  std::timed_mutex use;
  // Guarded by `use`. Empty once the session was lost or went back to the pool.
  std::optional<pooled_connection> conn;
  // Guarded by `use`. The server may hold locks (or settings) the bookkeeping does not know of:
  // reset before the connection goes back to the pool.
  bool dirty = false;
  // Guarded by `use`. A lock taken on it tagged the server session with conn's session_tag
  // (session_lock_protocol::tags_session): each ping also checks that it reaches that session.
  bool tagged = false;
  // Guarded by `use`. The server's dead-peer limit was set on it (session_registry::
  // limit_server_wait), and the statement that undoes it before the pool gets it back ("": none).
  bool server_limited = false;
  std::string server_limit_reset;
  std::chrono::seconds server_limit{0};  // the limit set, when server_limit_reset is not empty

  // Guarded by the registry's mutex.
  int users = 0;           // operations in progress on this session
  std::int64_t holds = 0;  // lock levels held on it, summed over every lock object
  std::chrono::milliseconds keepalive;
  std::chrono::steady_clock::time_point next_ping;
  // Fires once, when the session is lost (lost == loss.fired()). Thread-safe on its own: lock
  // objects set and clear their on_lost callbacks on it directly.
  loss_signal loss;
  // Where its ping is: not due yet, waiting for a pinger, or sent (the pinger holds `use`).
  enum class ping_phase { idle, queued, running } ping = ping_phase::idle;
  std::chrono::steady_clock::time_point ping_since;  // when it was queued / sent
  // The ping now running looked overdue only because the keepalive thread itself woke late, and
  // got a moment more, until reprieve_end (once per ping; see session_keepalive.cpp). The end is
  // kept so that an early wake of the keepalive thread does not cut the reprieve short.
  bool ping_reprieved = false;
  std::chrono::steady_clock::time_point reprieve_end;
  // Declared lost while its ping hung: the pinger stuck in it owns `conn` and closes it.
  bool written_off = false;
};

// A consistent copy of a session's state.
struct session_view {
  bool lost = false;
  std::int64_t holds = 0;
  std::stop_token stop;
};

// How lock_use ended.
enum class use_wait { locked, lost, timed_out };

// The registry's mutex and wake-ups, in their own block shared with the pinger threads: a pinger
// written off while stuck in a ping may outlive the registry, and still locks this afterwards.
struct registry_sync {
  std::mutex mu;
  std::condition_variable_any changed;  // wakes the keepalive thread; the destructor waits on it
  std::condition_variable work;         // wakes idle pingers
};

// Checks a keepalive period from the options struct `options_name` (e.g. "session_lock_options"):
// throws invalid_argument unless it lies between 10 ms and 1 hour.
void validate_keepalive(std::chrono::milliseconds keepalive, std::string_view options_name);

class session_registry {
 public:
  // The registry of `db`'s handle in this process (database_impl::sessions()). A forked child
  // gets a new one.
  static std::shared_ptr<session_registry> of(const database& db);

  // Made by `impl`, which owns it and outlives it.
  explicit session_registry(database_impl& impl);
  // Stops the keepalive thread and waits for the pingers, except those written off.
  ~session_registry();
  session_registry(const session_registry&) = delete;
  session_registry& operator=(const session_registry&) = delete;

  database_impl& db() const noexcept { return impl_; }
  // The process that created the registry.
  pid_t pid() const noexcept { return pid_; }

  // The owner's live session with one more user: the existing one, or a new one on a pooled
  // connection. keepalive: the ping period this user wants (the session uses the shortest).
  // Throws connection_error when no connection can be had.
  std::shared_ptr<pinned_session> pin(const std::string& owner, std::chrono::milliseconds keepalive);
  // A new session no owner shares (a transaction-scoped lock), with one user.
  std::shared_ptr<pinned_session> pin_private(std::chrono::milliseconds keepalive);
  // One more user of a session the caller already knows (e.g. to release a level on it).
  void pin_existing(pinned_session& s);
  // One user fewer. A session with no users and no holds leaves the registry and its connection
  // goes back to the pool — after a reset when dirty, closed when that fails; one whose dead-peer
  // limit needs undoing is first kept for the next pin (limited_idle_), else undone. The caller must not
  // hold s.use. Returns at once while other users remain, and for a lost session even while a hung
  // ping still holds s.use.
  void unpin(const std::shared_ptr<pinned_session>& s) noexcept;

  // Locks s.use into `use` (which must not own it yet), waiting until `deadline` (nullopt: as
  // long as it takes) or a stop on `stop` (both timed_out) — but gives up once the session is
  // lost: a ping stuck on a dead network holds s.use until TCP gives up. `locked` may still find
  // s.conn empty (lost meanwhile).
  use_wait lock_use(pinned_session& s, std::unique_lock<std::timed_mutex>& use,
                    std::optional<std::chrono::steady_clock::time_point> deadline, const std::stop_token& stop = {});

  // Sets the server's dead-peer limit (server_dead_peer_limit of its keepalive) on the session's
  // connection, once per session, and not at all when the connection has it already (kept from an
  // earlier session); the caller holds s.use and s.conn is set. Throws like a
  // statement (connection_error when the connection is dead).
  void limit_server_wait(pinned_session& s);

  // One ping on the session's connection (the caller holds s.use and s.conn is set): whether it
  // reached the session's server session. False when the connection broke, or when the ping of a
  // tagged session (behind a transaction-mode pooler) reached another server session; any other
  // error came from a live server and counts as an answer. Blocks as long as the statement does.
  bool ping(pinned_session& s) noexcept;

  // Records lock levels taken (+) or given back (−). The first hold schedules pings.
  void add_holds(pinned_session& s, std::int64_t delta);

  // Marks the session lost (idempotent): signals its stop_source, forgets it, and discards its
  // connection. Returns the on_lost callbacks to run once the caller has released s.use, which the
  // caller must hold.
  [[nodiscard]] callbacks lose(pinned_session& s) noexcept;

  session_view view(const pinned_session& s) const;

 private:
  // session_keepalive.cpp: the schedule and the pings.
  void keepalive_loop(std::stop_token stop);
  // Runs due pings until the registry closes or another pinger is idle too. `sync` is the
  // thread's own reference: after a write-off it touches nothing else of the registry.
  void pinger_loop(std::shared_ptr<registry_sync> sync) noexcept;
  // Starts one more pinger; false when no thread could be started. Requires mu_.
  bool start_pinger() noexcept;
  // Declares a session with a hung ping lost and writes its pinger off. Requires mu_.
  [[nodiscard]] callbacks write_off(pinned_session& s);
  // Wakes the keepalive thread when `s` is due before it would wake anyway. Requires mu_.
  void reschedule(const pinned_session& s);
  // Runs on_lost callbacks on a thread of this registry (they may destroy the last handle).
  void run_lost_callbacks(callbacks& cbs) noexcept;

  // Marks `s` lost and forgets it; returns its callbacks. Requires mu_.
  callbacks mark_lost(pinned_session& s);
  std::shared_ptr<pinned_session> insert(const std::string& owner, pooled_connection conn,
                                         std::chrono::milliseconds keepalive);  // requires mu_

  database_impl& impl_;
  time_source& clock_;
  const pid_t pid_;
  const std::shared_ptr<registry_sync> sync_;
  std::mutex& mu_;  // sync_->mu
  // A first hold wakes the keepalive thread only when its ping is due before the thread wakes
  // anyway, so a lock/unlock loop does not cost a thread switch per cycle.
  wake_schedule schedule_;
  std::map<std::string, std::shared_ptr<pinned_session>> sessions_;  // live sessions by owner
  std::uint64_t next_private_ = 0;
  // The dead-peer limit set on connections — pooled ones (PostgreSQL: it needs no reset) and
  // limited_idle_ ones (MySQL) — by connection and its session_tag (a new connection at a reused
  // address has another tag), so that a lock/unlock loop sets it once per connection, not once
  // per pin. Guarded by mu_.
  struct server_limit_record {
    std::string tag;
    std::chrono::seconds limit;
  };
  std::map<const connection*, server_limit_record> kept_limits_;
  // Connections whose dead-peer limit must be undone before the pool may have them (MySQL's
  // wait_timeout, which would end any other user's idle session): kept here between pins instead,
  // with their limit and since when they idle, so that a lock/unlock loop neither sets nor resets
  // it each cycle. The server ends such a connection once it idles for its limit: one is reused
  // only within half of that, and discarded after. At most the pool's size. Guarded by mu_.
  struct limited_connection {
    pooled_connection conn;
    std::chrono::seconds limit;
    std::chrono::steady_clock::time_point idle_since;
  };
  std::vector<limited_connection> limited_idle_;
  // A connection for a new session: the most recent limited idle one still well inside its limit,
  // or a pooled one (limit 0). Throws connection_error when none can be had.
  limited_connection take_connection();
  // Keeps a connection whose server limit is still set, idle since `idle_since`, for the next pin;
  // false, with `conn` untouched, when it is broken, the registry closes, or enough are kept.
  bool keep_limited(std::optional<pooled_connection>& conn, std::chrono::seconds limit,
                    std::chrono::steady_clock::time_point idle_since);
  // Pings waiting for a pinger, and the pinger threads (detached; counted so the destructor can
  // wait for them — a written-off one no longer counts). Guarded by mu_.
  std::deque<std::shared_ptr<pinned_session>> due_;
  int pingers_ = 0;
  int idle_pingers_ = 0;
  bool closing_ = false;  // the destructor runs: pingers leave
  // Started with the first hold. A pointer so that a forked child can leak it: the thread does not
  // exist there, and joining it would hang.
  std::unique_ptr<std::jthread> thread_;
};

// Pins a session for one operation and unpins it on scope exit.
class session_pin {
 public:
  session_pin(session_registry& r, std::shared_ptr<pinned_session> s) noexcept : registry_(r), session_(std::move(s)) {}
  ~session_pin() { registry_.unpin(session_); }
  session_pin(const session_pin&) = delete;
  session_pin& operator=(const session_pin&) = delete;
  pinned_session& operator*() const noexcept { return *session_; }
  pinned_session* operator->() const noexcept { return session_.get(); }
  const std::shared_ptr<pinned_session>& get() const noexcept { return session_; }

 private:
  session_registry& registry_;
  std::shared_ptr<pinned_session> session_;
};

}  // namespace sqllock::detail
