#include "core/session/pinned_session.hpp"

#include <unistd.h>

#include <algorithm>

#include "common/identity.hpp"
#include "dialect/session_lock_sql.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

void validate_keepalive(std::chrono::milliseconds keepalive, std::string_view options_name) {
  if (keepalive < std::chrono::milliseconds(10) || keepalive > std::chrono::hours(1))
    throw invalid_argument(std::string(options_name) + "::keepalive must be between 10 ms and 1 hour");
}

std::chrono::seconds server_dead_peer_limit(std::chrono::milliseconds keepalive) noexcept {
  constexpr std::chrono::milliseconds margin{1200};
  return std::chrono::ceil<std::chrono::seconds>(keepalive + kPingTimeout + keepalive + margin);
}

namespace {

// How often an owner waiting for a session's `use` checks whether the session was lost meanwhile.
// Only a wait behind another statement polls (a free session locks at once), and a hung ping is
// declared lost after kPingTimeout, so this adds little to the time an unlock takes.
constexpr std::chrono::milliseconds kLostPoll{20};

// Lets go of a connection that must not go back to the pool and cannot be reset: it is marked
// broken, so the pool discards it. PostgreSQL drivers close the socket, which ends the session
// and frees its locks.
void discard(pooled_connection& c) noexcept { c->abandon(); }

}  // namespace

pinned_session::pinned_session(std::string owner_key, pooled_connection c, std::chrono::milliseconds keepalive_period)
    : owner(std::move(owner_key)), pid(process_id()), conn(std::move(c)), keepalive(keepalive_period) {}

std::shared_ptr<session_registry> session_registry::of(const database& db) {
  return database_access::impl(db).sessions();
}

session_registry::session_registry(database_impl& impl)
    : impl_(impl), clock_(impl.time()), pid_(process_id()), sync_(std::make_shared<registry_sync>()), mu_(sync_->mu) {}

session_registry::~session_registry() {
  if (process_id() != pid_) {
    // The parent's threads do not exist in this process: nothing to stop or wait for.
    if (thread_) (void)thread_.release();
    return;
  }
  if (thread_) {
    thread_->request_stop();
    sync_->changed.notify_all();
    thread_->join();
  }
  // Pingers finish the ping they are in (none can be hung here: a hung ping is written off before
  // its owner may go on, see lock_use) and leave.
  std::unique_lock lock(mu_);
  closing_ = true;
  sync_->work.notify_all();
  sync_->changed.wait(lock, [&] { return pingers_ == 0; });
  // Their server limit is still set: not for the pool.
  for (auto& l : limited_idle_) discard(l.conn);
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
  // pinned a session meanwhile; then this connection goes straight back to where it came from.
  limited_connection taken = take_connection();
  std::shared_ptr<pinned_session> existing;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(owner);
    if (it == sessions_.end()) return insert(owner, std::move(taken.conn), keepalive);
    ++it->second->users;
    it->second->keepalive = std::min(it->second->keepalive, keepalive);
    existing = it->second;
  }
  // A connection whose server limit is set is kept for another pin, or closed: not for the pool.
  std::optional<pooled_connection> unused(std::move(taken.conn));
  if (taken.limit > std::chrono::seconds::zero() && !keep_limited(unused, taken.limit, taken.idle_since))
    discard(*unused);
  return existing;
}

std::shared_ptr<pinned_session> session_registry::pin_private(std::chrono::milliseconds keepalive) {
  pooled_connection conn = std::move(take_connection().conn);
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
  {
    // Not the last user: the session stays, and the thread leaves at once — a waiter that gave up
    // (a stop) does not wait for another thread's statement on it.
    std::lock_guard lock(mu_);
    if (s->users > 1) {
      --s->users;
      return;
    }
  }
  std::unique_lock use(s->use, std::defer_lock);
  const bool locked = lock_use(*s, use, std::nullopt) == use_wait::locked;
  std::optional<pooled_connection> idle;
  {
    std::lock_guard lock(mu_);
    // A lost session's connection is gone already, or belongs to the pinger stuck in its ping.
    if (--s->users > 0 || s->holds > 0 || s->loss.fired() || !locked) return;
    if (auto it = sessions_.find(s->owner); it != sessions_.end() && it->second == s) sessions_.erase(it);
    idle.swap(s->conn);
  }
  if (!idle || (!s->dirty && s->server_limit_reset.empty())) return;  // `idle` goes back to the pool as it is
  try {
    if (s->dirty)
      for (const auto& statement : session_reset_statements(impl_.dialect())) (*idle)->exec_direct(statement);
    s->dirty = false;
    if (!s->server_limit_reset.empty()) {
      if (keep_limited(idle, s->server_limit, clock_.now())) return;
      const connection* c = &**idle;
      (*idle)->exec_direct(s->server_limit_reset);
      std::lock_guard lock(mu_);
      kept_limits_.erase(c);
    }
    s->server_limit_reset.clear();
  } catch (const std::exception&) {
    if (!(*idle)->broken()) discard(*idle);
  }
}

bool session_registry::keep_limited(std::optional<pooled_connection>& conn, std::chrono::seconds limit,
                                    std::chrono::steady_clock::time_point idle_since) {
  if ((*conn)->broken()) return false;
  std::lock_guard lock(mu_);
  if (closing_ || limited_idle_.size() >= impl_.options().pool_size) return false;
  limited_idle_.push_back({std::move(*conn), limit, idle_since});
  conn.reset();
  return true;
}

session_registry::limited_connection session_registry::take_connection() {
  std::vector<limited_connection> stale;  // discarded outside the mutex
  std::optional<limited_connection> found;
  {
    std::lock_guard lock(mu_);
    const auto now = clock_.now();
    const auto fresh = [&](const limited_connection& l) { return now - l.idle_since < l.limit / 2; };
    if (!limited_idle_.empty() && fresh(limited_idle_.back())) {
      found.emplace(std::move(limited_idle_.back()));
      limited_idle_.pop_back();
    }
    // The others idle longer: those past half their limit go.
    std::erase_if(limited_idle_, [&](limited_connection& l) {
      if (fresh(l)) return false;
      stale.push_back(std::move(l));
      return true;
    });
  }
  for (auto& l : stale) discard(l.conn);
  if (found) return std::move(*found);
  return {impl_.borrow(), std::chrono::seconds::zero(), {}};
}

void session_registry::limit_server_wait(pinned_session& s) {
  if (s.server_limited || !s.conn) return;
  const std::chrono::milliseconds keepalive = [&] {
    std::lock_guard lock(mu_);
    return s.keepalive;
  }();
  s.server_limited = true;
  const std::chrono::seconds limit = server_dead_peer_limit(keepalive);
  const auto sql = dead_peer_limit_statements(impl_.spec(), limit);
  if (!sql) return;
  connection& c = **s.conn;
  if (c.session_tag.empty()) c.session_tag = random_token();
  // Set from here on, and undone (MySQL) when the connection goes back to the pool: also when the
  // statement below fails midway.
  s.server_limit_reset = sql->reset;
  s.server_limit = limit;
  {
    std::lock_guard lock(mu_);
    const auto it = kept_limits_.find(&c);
    if (it != kept_limits_.end() && it->second.tag == c.session_tag && it->second.limit == limit) return;
    kept_limits_.erase(&c);  // until the statement below succeeds
  }
  const std::vector<value> params(sql->params.begin(), sql->params.end());
  c.exec(sql->set, params);
  std::lock_guard lock(mu_);
  // Records of connections closed since are never looked up again; keep the map small.
  if (kept_limits_.size() >= 4 * impl_.options().pool_size + 16) kept_limits_.clear();
  kept_limits_[&c] = {c.session_tag, limit};
}

use_wait session_registry::lock_use(pinned_session& s, std::unique_lock<std::timed_mutex>& use,
                                    std::optional<steady::time_point> deadline, const std::stop_token& stop) {
  if (use.try_lock()) return use_wait::locked;
  while (true) {
    if (s.loss.fired()) return use_wait::lost;
    if (stop.stop_requested()) return use_wait::timed_out;
    time_source::duration wait = kLostPoll;
    if (deadline) {
      const auto now = clock_.now();
      if (now >= *deadline) return use_wait::timed_out;
      wait = std::min(wait, *deadline - now);
    }
    if (use.try_lock_for(wait)) return use_wait::locked;
  }
}

void session_registry::add_holds(pinned_session& s, std::int64_t delta) {
  std::lock_guard lock(mu_);
  const bool first = s.holds == 0 && delta > 0;
  s.holds = std::max<std::int64_t>(0, s.holds + delta);
  if (!first) return;
  s.next_ping = clock_.now() + s.keepalive;
  if (!thread_) thread_ = std::make_unique<std::jthread>([this](std::stop_token st) { keepalive_loop(st); });
  reschedule(s);
}

callbacks session_registry::mark_lost(pinned_session& s) {
  if (s.loss.fired()) return {};
  auto out = s.loss.fire();
  if (auto it = sessions_.find(s.owner); it != sessions_.end() && it->second.get() == &s) sessions_.erase(it);
  return out;
}

callbacks session_registry::lose(pinned_session& s) noexcept {
  callbacks out;
  std::optional<pooled_connection> dead;
  {
    std::lock_guard lock(mu_);
    if (s.loss.fired()) return out;
    out = mark_lost(s);
    dead.swap(s.conn);
  }
  // A session is lost because its connection broke, so the pool discards it anyway; make sure of
  // it, since a live session here would still hold locks nobody tracks.
  if (dead && !(*dead)->broken()) discard(*dead);
  return out;
}

session_view session_registry::view(const pinned_session& s) const {
  std::lock_guard lock(mu_);
  return {s.loss.fired(), s.holds, s.loss.token()};
}

}  // namespace sqllock::detail
