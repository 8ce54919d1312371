#include "core/pinned_session.hpp"

#include <unistd.h>

#include <algorithm>

#include "core/identity.hpp"
#include "dialect/session_lock_sql.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

using steady = std::chrono::steady_clock;

// How soon the keepalive looks again at a session that was busy with a statement of its owner.
constexpr std::chrono::milliseconds kBusyRetry{100};

// Lets go of a connection that must not go back to the pool and cannot be reset: it is marked
// broken, so the pool discards it. PostgreSQL drivers close the socket, which ends the session
// and frees its locks.
void discard(pooled_connection& c) noexcept { c->abandon(); }

}  // namespace

void run_callbacks(callbacks& cbs) noexcept {
  for (auto& cb : cbs) {
    try {
      if (cb) cb();
    } catch (...) {
    }
  }
}

pinned_session::pinned_session(std::string owner_key, pooled_connection c, std::chrono::milliseconds keepalive_period)
    : owner(std::move(owner_key)), pid(process_id()), conn(std::move(c)), keepalive(keepalive_period) {}

std::shared_ptr<session_registry> session_registry::of(const database& db) {
  // Leaked on purpose: lock objects with static storage may outlive any static map.
  static auto* mu = new std::mutex;
  static auto* all = new std::map<const database_impl*, std::weak_ptr<session_registry>>;
  const database_impl* key = &database_access::impl(db);
  std::lock_guard lock(*mu);
  for (auto it = all->begin(); it != all->end();) it = it->second.expired() ? all->erase(it) : std::next(it);
  auto& slot = (*all)[key];
  auto registry = slot.lock();
  if (!registry || registry->pid_ != process_id()) {  // none yet, or the parent's after a fork
    registry = std::make_shared<session_registry>(db);
    slot = registry;
  }
  return registry;
}

session_registry::session_registry(const database& db)
    : db_(db), impl_(database_access::impl(db)), pid_(process_id()) {}

session_registry::~session_registry() {
  if (!thread_) return;
  if (process_id() != pid_) {
    (void)thread_.release();  // the parent's thread; it does not exist in this process
    return;
  }
  thread_->request_stop();
  changed_.notify_all();
  thread_->join();
}

std::shared_ptr<pinned_session> session_registry::insert(const std::string& owner, pooled_connection conn,
                                                          std::chrono::milliseconds keepalive) {
  auto s = std::make_shared<pinned_session>(owner, std::move(conn), keepalive);
  s->users = 1;
  sessions_[owner] = s;
  return s;
}

std::shared_ptr<pinned_session> session_registry::pin(const std::string& owner, std::chrono::milliseconds keepalive) {
  {
    std::lock_guard lock(mu_);
    if (auto it = sessions_.find(owner); it != sessions_.end()) {
      ++it->second->users;
      it->second->keepalive = std::min(it->second->keepalive, keepalive);
      return it->second;
    }
  }
  // Connecting may take a while: not under the mutex. Another user of the same owner may have
  // pinned a session meanwhile; then this connection goes straight back to the pool.
  std::optional<pooled_connection> conn(impl_.borrow());
  std::lock_guard lock(mu_);
  if (auto it = sessions_.find(owner); it != sessions_.end()) {
    ++it->second->users;
    it->second->keepalive = std::min(it->second->keepalive, keepalive);
    return it->second;
  }
  return insert(owner, std::move(*conn), keepalive);
}

std::shared_ptr<pinned_session> session_registry::pin_private(std::chrono::milliseconds keepalive) {
  pooled_connection conn = impl_.borrow();
  std::lock_guard lock(mu_);
  return insert("x:" + std::to_string(++next_private_), std::move(conn), keepalive);
}

void session_registry::pin_existing(pinned_session& s) {
  std::lock_guard lock(mu_);
  ++s.users;
}

void session_registry::unpin(const std::shared_ptr<pinned_session>& s) noexcept {
  if (!s) return;
  if (s->pid != process_id()) return;  // the parent's session: never touched in a forked child
  std::unique_lock use(s->use);
  std::optional<pooled_connection> idle;
  {
    std::lock_guard lock(mu_);
    if (--s->users > 0 || s->holds > 0 || s->lost) return;
    if (auto it = sessions_.find(s->owner); it != sessions_.end() && it->second == s) sessions_.erase(it);
    idle.swap(s->conn);
  }
  if (!idle || !s->dirty) return;  // `idle` goes back to the pool as it is
  try {
    for (const auto& statement : session_reset_statements(impl_.dialect())) (*idle)->exec_direct(statement);
    s->dirty = false;
  } catch (const std::exception&) {
    if (!(*idle)->broken()) discard(*idle);
  }
}

void session_registry::add_holds(pinned_session& s, std::int64_t delta) {
  {
    std::lock_guard lock(mu_);
    const bool first = s.holds == 0 && delta > 0;
    s.holds = std::max<std::int64_t>(0, s.holds + delta);
    if (!first) return;
    s.next_ping = steady::now() + s.keepalive;
    if (!thread_) thread_ = std::make_unique<std::jthread>([this](std::stop_token st) { keepalive_loop(st); });
    if (s.next_ping >= scheduled_) return;  // the thread wakes before this ping is due anyway
    ++changes_;
  }
  changed_.notify_all();
}

callbacks session_registry::lose(pinned_session& s) noexcept {
  callbacks out;
  std::optional<pooled_connection> dead;
  {
    std::lock_guard lock(mu_);
    if (s.lost) return out;
    s.lost = true;
    s.stop.request_stop();
    for (auto& [key, cb] : s.on_lost)
      if (cb) out.push_back(cb);
    if (auto it = sessions_.find(s.owner); it != sessions_.end() && it->second.get() == &s) sessions_.erase(it);
    dead.swap(s.conn);
  }
  // A session is lost because its connection broke, so the pool discards it anyway; make sure of
  // it, since a live session here would still hold locks nobody tracks.
  if (dead && !(*dead)->broken()) discard(*dead);
  return out;
}

session_view session_registry::view(const pinned_session& s) const {
  std::lock_guard lock(mu_);
  return {s.lost, s.holds, s.stop.get_token()};
}

void session_registry::set_on_lost(pinned_session& s, const void* key, std::function<void()> callback) {
  std::lock_guard lock(mu_);
  s.on_lost[key] = std::move(callback);
}

void session_registry::clear_on_lost(pinned_session& s, const void* key) {
  std::lock_guard lock(mu_);
  s.on_lost.erase(key);
}

callbacks session_registry::ping(const std::shared_ptr<pinned_session>& s) {
  std::unique_lock use(s->use, std::try_to_lock);
  if (!use) {
    // A statement of the owner is running on it, and will fail at once if the session dies.
    std::lock_guard lock(mu_);
    s->next_ping = steady::now() + std::min(s->keepalive, std::chrono::duration_cast<std::chrono::milliseconds>(kBusyRetry));
    return {};
  }
  if (!s->conn) return {};  // went back to the pool or was lost meanwhile
  bool alive = true;
  try {
    (*s->conn)->exec_direct(keepalive_statement(impl_.dialect()));
  } catch (const std::exception&) {
    // Only a broken connection means a dead session; any other error came from a live server.
    alive = !(*s->conn)->broken();
  }
  if (alive) {
    std::lock_guard lock(mu_);
    s->next_ping = steady::now() + s->keepalive;
    return {};
  }
  return lose(*s);
}

void session_registry::keepalive_loop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    const auto now = steady::now();
    auto next = steady::time_point::max();
    std::vector<std::shared_ptr<pinned_session>> due;
    for (const auto& [owner, s] : sessions_) {
      if (s->holds == 0 || s->lost) continue;
      if (s->next_ping <= now)
        due.push_back(s);
      else
        next = std::min(next, s->next_ping);
    }
    if (due.empty()) {
      // Until the next ping is due, a session gets its first hold, or the registry closes.
      const auto seen = changes_;
      const auto changed = [&] { return changes_ != seen; };
      scheduled_ = next;
      if (next == steady::time_point::max())
        changed_.wait(lock, stop, changed);
      else
        changed_.wait_until(lock, stop, next, changed);
      scheduled_ = steady::time_point::min();
      continue;
    }
    lock.unlock();
    callbacks lost;
    for (const auto& s : due) {
      auto cbs = ping(s);
      lost.insert(lost.end(), cbs.begin(), cbs.end());
    }
    if (!lost.empty()) {
      // A callback may destroy the last lock object, and with it the last other owner of this
      // registry; destroying the registry on this thread would join this very thread. So hold a
      // reference while they run, and let a short-lived thread drop it.
      auto self = weak_from_this().lock();
      run_callbacks(lost);
      if (self) std::thread([keep = std::move(self)]() mutable { keep.reset(); }).detach();
    }
    lock.lock();
  }
}

}  // namespace sqllock::detail
