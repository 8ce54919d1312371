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
// next talks (TCP keepalives alone take minutes). So one keepalive thread per handle pings every
// session that holds locks every `keepalive` period; a ping that finds the connection broken marks
// the session lost: its stop_source is signalled, its on_lost callbacks run, and its connection is
// discarded. A session whose statement fails because the connection broke is lost the same way.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "core/database_impl.hpp"
#include "sqllock/database.hpp"

namespace sqllock::detail {

using callbacks = std::vector<std::function<void()>>;

// Runs each callback, swallowing exceptions (a user callback must not take a thread down).
void run_callbacks(callbacks& cbs) noexcept;

struct pinned_session {
  pinned_session(std::string owner_key, pooled_connection c, std::chrono::milliseconds keepalive_period);

  const std::string owner;  // "t:<thread id>", "k:<owner key>" or "x:<n>" (a private transaction)
  const pid_t pid;          // the process that opened it; a forked child must not touch it

  // Held while a statement runs on `conn`: by lock operations and by the keepalive's ping.
  // Timed, so that a bounded acquire does not wait past its deadline for another user.
  std::timed_mutex use;
  // Guarded by `use`. Empty once the session was lost or went back to the pool.
  std::optional<pooled_connection> conn;
  // Guarded by `use`. The server may hold locks (or settings) the bookkeeping does not know of:
  // reset before the connection goes back to the pool.
  bool dirty = false;

  // Guarded by the registry's mutex.
  int users = 0;            // operations in progress on this session
  std::int64_t holds = 0;   // lock levels held on it, summed over every lock object
  bool lost = false;
  std::chrono::milliseconds keepalive;
  std::chrono::steady_clock::time_point next_ping;
  std::stop_source stop;
  std::map<const void*, std::function<void()>> on_lost;  // by lock object
};

// A consistent copy of a session's state.
struct session_view {
  bool lost = false;
  std::int64_t holds = 0;
  std::stop_token stop;
};

class session_registry : public std::enable_shared_from_this<session_registry> {
 public:
  // The registry of `db`'s handle in this process, created on first use and kept while any lock
  // object or pinned session uses it. A forked child gets a new one.
  static std::shared_ptr<session_registry> of(const database& db);

  explicit session_registry(const database& db);
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
  // goes back to the pool — after a reset when dirty, closed when that fails. The caller must not
  // hold s.use.
  void unpin(const std::shared_ptr<pinned_session>& s) noexcept;

  // Records lock levels taken (+) or given back (−). The first hold schedules pings.
  void add_holds(pinned_session& s, std::int64_t delta);

  // Marks the session lost (idempotent): signals its stop_source, forgets it, and discards its
  // connection. Returns the on_lost callbacks to run once the caller has released s.use, which the
  // caller must hold.
  [[nodiscard]] callbacks lose(pinned_session& s) noexcept;

  session_view view(const pinned_session& s) const;
  void set_on_lost(pinned_session& s, const void* key, std::function<void()> callback);
  void clear_on_lost(pinned_session& s, const void* key);

 private:
  void keepalive_loop(std::stop_token stop);
  // Pings one session; returns the on_lost callbacks to run when it turned out dead.
  callbacks ping(const std::shared_ptr<pinned_session>& s);
  std::shared_ptr<pinned_session> insert(const std::string& owner, pooled_connection conn,
                                         std::chrono::milliseconds keepalive);  // requires mu_

  const database db_;  // keeps the handle (and its pool) alive as long as any session
  database_impl& impl_;
  const pid_t pid_;
  mutable std::mutex mu_;
  std::condition_variable_any changed_;
  std::uint64_t changes_ = 0;  // counts first holds, so the keepalive rechecks its schedule
  // When the sleeping keepalive thread wakes next; min() while it is awake (it re-reads every
  // session before sleeping again). A first hold wakes it only when its ping is due earlier, so a
  // lock/unlock loop does not cost a thread switch per cycle.
  std::chrono::steady_clock::time_point scheduled_ = std::chrono::steady_clock::time_point::min();
  std::map<std::string, std::shared_ptr<pinned_session>> sessions_;  // live sessions by owner
  std::uint64_t next_private_ = 0;
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
