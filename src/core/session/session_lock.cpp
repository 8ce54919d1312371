#include "core/session/session_lock.hpp"

#include <unistd.h>

#include <algorithm>

#include "common/identity.hpp"
#include "core/wait/wait_bounds.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// A bounded acquire waits at least this long for its session to be free, so that a keepalive
// ping (one round trip) never turns into a refused try_lock().
constexpr std::chrono::seconds kSessionBusyGrace{1};

const char* mode_name(lock_mode m) noexcept { return m == lock_mode::shared ? "shared " : ""; }

// The session a level lives on belongs to another process: the parent's, seen in a forked child.
bool parents(const std::shared_ptr<pinned_session>& s) { return s->pid != process_id(); }

bool same_session(const std::shared_ptr<pinned_session>& a, const std::shared_ptr<pinned_session>& b) { return a == b; }

}  // namespace

void validate_session_lock_options(const session_lock_options& options) {
  validate_keepalive(options.keepalive, "session_lock_options");
}

session_lock::session_lock(const database& db, std::unique_ptr<session_lock_protocol> protocol,
                           session_lock_options options)
    : db_(db), impl_(database_access::impl(db)), protocol_(std::move(protocol)), options_(std::move(options)),
      who_("session_lock_options", protocol_->description(), options_.owner, options_.on_unlock_error) {
  validate_session_lock_options(options_);
}

session_lock::~session_lock() {
  mine_.drop_if(parents);  // the parent's: nothing to release here
  release_everything(
      mine_, who_,
      [&](const std::string& owner, std::size_t mode) { release_as(owner, static_cast<lock_mode>(mode), true); },
      [&](const std::string& owner) {
        if (const auto left = mine_.drop(owner)) (*left)->loss.clear(this);
      });
}

bool session_lock::acquire(lock_mode mode, std::optional<steady::time_point> deadline, std::stop_token stop) {
  const caller_deadline bound(deadline);  // no statement of the acquire outlives it (plus a grace)
  auto reg = impl_.sessions();
  const std::string owner = who_.owner();
  // Idle pooled connections may have died with the server (a restart): each such connection
  // fails once when used, and then the next one is tried.
  const std::size_t retries = impl_.options().pool_size + 2;
  const auto keeps_failing = [&] {
    return connection_error("the database session for " + protocol_->description() +
                            " keeps failing; check the server and retry");
  };
  for (std::size_t attempt = 0;; ++attempt) {
    session_pin pin(*reg, reg->pin(owner, options_.keepalive));
    std::unique_lock use(pin->use, std::defer_lock);
    const auto waited = reg->lock_use(
        *pin, use, deadline ? std::optional(std::max(*deadline, impl_.time().now() + kSessionBusyGrace)) : std::nullopt,
        stop);
    // Timed out or stopped: another thread of this owner is still waiting on the session.
    if (waited == use_wait::timed_out) return false;
    if (waited == use_wait::lost || !pin->conn) {  // found dead meanwhile; the owner gets a new session
      if (attempt < retries) continue;
      throw keeps_failing();
    }
    bool acquired = false;
    session_lock_protocol::attempt state;
    const auto sent = impl_.time().now();
    try {
      reg->limit_server_wait(*pin);  // a dead connection fails here like in the acquire
      acquired = protocol_->acquire(**pin->conn, mode, deadline, stop, state);
      if (state.dirty) pin->dirty = true;
    } catch (const connection_error&) {
      // The session is gone, and with it every lock it held: nothing is held by this attempt.
      const bool stale = !state.answered && reg->view(*pin).holds == 0;
      auto lost = reg->lose(*pin);
      use.unlock();
      run_callbacks(lost);
      // A connection that was dead before it was used held nothing: try another one.
      if (stale && attempt < retries) continue;
      throw;
    } catch (...) {
      if (state.dirty) pin->dirty = true;
      throw;
    }
    if (!acquired) return false;
    if (protocol_->tags_session()) pin->tagged = true;
    // While the statement waited, nobody watched its session: the keepalive cannot ping a session
    // busy with a statement. A grant read a keepalive period or more after the attempt began may
    // name a session the server has ended since — killed by an administrator while the answer was
    // on its way, or ended as silent: a process stopped (SIGSTOP, a suspended VM) right after the
    // grant, and MariaDB ends a session silent for its wait_timeout (limit_server_wait), freeing
    // the lock for someone else. Such a grant counts only once a ping reaches the session, the
    // check the keepalive would have made by then; otherwise the session is lost and the owner
    // tries on a new one. A grant read sooner is checked by the keepalive's next ping.
    if (impl_.time().now() - sent >= options_.keepalive && !reg->ping(*pin)) {
      auto lost = reg->lose(*pin);
      use.unlock();
      run_callbacks(lost);
      if (attempt < retries) continue;
      throw keeps_failing();
    }
    reg->add_holds(*pin, +1);
    const auto recorded = mine_.add(owner, pin.get(), index(mode), same_session);
    // A new session for this owner: levels recorded on an earlier one died with it.
    if (recorded.replaced) (*recorded.replaced)->loss.clear(this);
    if (recorded.is_new && options_.on_lost) pin->loss.set(this, options_.on_lost);
    return true;
  }
}

void session_lock::drop_one(const std::string& owner, const pinned_session& s, lock_mode mode) {
  const auto on_s = [&](const std::shared_ptr<pinned_session>& mine) { return mine.get() == &s; };
  if (const auto left = mine_.drop_one(owner, index(mode), on_s)) (*left)->loss.clear(this);
}

void session_lock::release(lock_mode mode) { release_as(who_.owner(), mode, false); }

void session_lock::release_as(const std::string& owner, lock_mode mode, bool closing) {
  const auto mine = mine_.find(owner);
  if (!mine || mine->count[index(mode)] == 0) throw not_held(not_held_message(owner, mode));
  const std::shared_ptr<pinned_session> s = mine->hold;
  if (parents(s)) {
    mine_.drop(owner);
    throw not_held(protocol_->description() +
                   " was taken by the parent process; a forked child holds none "
                   "of its parent's session locks");
  }
  const std::string lost_message = who_.lost_before_release("its database session died, so the server freed it then");
  auto reg = impl_.sessions();
  reg->pin_existing(*s);
  session_pin pin(*reg, s);
  // A lost session is not waited for: a ping hung on its dead connection may hold s->use for
  // minutes, and there is nothing left to release anyway.
  std::unique_lock use(s->use, std::defer_lock);
  if (reg->lock_use(*s, use, std::nullopt) != use_wait::locked || !s->conn) {
    drop_one(owner, *s, mode);
    throw not_held(lost_message);
  }
  bool released = false;
  try {
    released = protocol_->release(**s->conn, mode);
  } catch (const connection_error&) {
    auto lost = reg->lose(*s);
    drop_one(owner, *s, mode);
    use.unlock();
    run_callbacks(lost);
    throw not_held(lost_message);
  } catch (const lock_lost&) {
    // The server session that holds the level is out of reach (protocol_->release says why).
    auto lost = reg->lose(*s);
    drop_one(owner, *s, mode);
    use.unlock();
    run_callbacks(lost);
    throw;
  } catch (const std::exception&) {
    if (closing) {
      // The object is going away: forget the level, and let the session be reset (all its
      // locks dropped) before the pool reuses it.
      s->dirty = true;
      reg->add_holds(*s, -1);
      drop_one(owner, *s, mode);
    }
    throw;
  }
  reg->add_holds(*s, -1);
  drop_one(owner, *s, mode);
  if (!released) {
    s->dirty = true;  // the server and the bookkeeping disagree: reset before reuse
    throw not_held("the server reports that its session did not hold " + protocol_->description() +
                   " any more (was it released behind sqllock's back?)");
  }
}

void session_lock::unlock(lock_mode mode) noexcept {
  who_.unlock([&] { release(mode); });
}

bool session_lock::holds(lock_mode mode) const noexcept {
  try {
    const auto mine = mine_.find(who_.owner());
    if (!mine || mine->count[index(mode)] == 0) return false;
    return !parents(mine->hold) && !mine->hold->loss.fired();
  } catch (...) {
    return false;
  }
}

std::int64_t session_lock::count(lock_mode mode) const noexcept {
  try {
    return mine_.count(who_.owner(), index(mode));
  } catch (...) {
    return 0;
  }
}

std::stop_token session_lock::lost_token() const {
  const auto mine = mine_.find(who_.owner());
  if (!mine) throw not_held("lost_token(): " + protocol_->description() + " is not held by the caller");
  return mine->hold->loss.token();
}

std::string session_lock::not_held_message(const std::string& owner, lock_mode mode) const {
  if (mine_.find(owner)) {  // the owner holds levels, of the other mode only
    std::string m = mode_name(mode);
    m += protocol_->description();
    m += " is not held by the caller, which holds it in ";
    m += mode == lock_mode::shared ? "exclusive" : "shared";
    m += " mode only: release that mode instead";
    return m;
  }
  std::string m = mode_name(mode);
  m += who_.not_held_message(mine_.others_hold(owner));
  return m;
}

}  // namespace sqllock::detail
