#include "core/session_lock.hpp"

#include <unistd.h>

#include <iostream>
#include <tuple>
#include <vector>

#include "common/identity.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

using steady = std::chrono::steady_clock;

// A bounded acquire waits at least this long for its session to be free, so that a keepalive
// ping (one round trip) never turns into a refused try_lock().
constexpr std::chrono::seconds kSessionBusyGrace{1};

const char* mode_name(lock_mode m) noexcept { return m == lock_mode::shared ? "shared " : ""; }

}  // namespace

void validate_session_lock_options(const session_lock_options& options) {
  if (options.owner.size() > 128) throw invalid_argument("session_lock_options::owner is longer than 128 bytes");
  if (options.keepalive < std::chrono::milliseconds(10) || options.keepalive > std::chrono::hours(1))
    throw invalid_argument("session_lock_options::keepalive must be between 10 ms and 1 hour");
}

session_lock::session_lock(const database& db, std::unique_ptr<session_lock_protocol> protocol,
                           session_lock_options options)
    : db_(db), protocol_(std::move(protocol)), options_(std::move(options)) {
  validate_session_lock_options(options_);
  if (!options_.on_unlock_error) {
    options_.on_unlock_error = [what = protocol_->description()](const std::exception& e) {
      std::cerr << "sqllock: unlock of " << what << " failed: " << e.what() << '\n';
    };
  }
}

session_lock::~session_lock() {
  std::vector<std::tuple<std::string, lock_mode>> levels;
  {
    std::lock_guard lock(mu_);
    for (auto it = mine_.begin(); it != mine_.end();) {
      if (it->second.session->pid != process_id()) {  // the parent's: nothing to release here
        it = mine_.erase(it);
        continue;
      }
      for (const lock_mode m : {lock_mode::exclusive, lock_mode::shared})
        for (std::int64_t i = 0; i < it->second.count[index(m)]; ++i) levels.emplace_back(it->first, m);
      ++it;
    }
  }
  for (const auto& [owner, mode] : levels) {
    try {
      release_as(owner, mode, true);
    } catch (const std::exception& e) {
      try {
        options_.on_unlock_error(e);
      } catch (...) {
      }
    }
  }
}

std::string session_lock::owner_token() const {
  if (!options_.owner.empty()) return "k:" + options_.owner;
  return "t:" + current_thread_text();
}

std::shared_ptr<session_registry> session_lock::registry() {
  std::lock_guard lock(mu_);
  if (!registry_ || registry_->pid() != process_id()) registry_ = session_registry::of(db_);
  return registry_;
}

bool session_lock::acquire(lock_mode mode, std::optional<steady::time_point> deadline) {
  auto reg = registry();
  const std::string owner = owner_token();
  // Idle pooled connections may have died with the server (a restart): each such connection
  // fails once when used, and then the next one is tried.
  const std::size_t retries = reg->db().options().pool_size + 2;
  for (std::size_t attempt = 0;; ++attempt) {
    session_pin pin(*reg, reg->pin(owner, options_.keepalive));
    std::unique_lock use(pin->use, std::defer_lock);
    const auto waited = reg->lock_use(
        *pin, use, deadline ? std::optional(std::max(*deadline, steady::now() + kSessionBusyGrace)) : std::nullopt);
    // Timed out: another thread of this owner is still waiting on the session.
    if (waited == use_wait::timed_out) return false;
    if (waited == use_wait::lost || !pin->conn) {  // found dead meanwhile; the owner gets a new session
      if (attempt < retries) continue;
      throw connection_error("the database session for " + protocol_->description() +
                             " keeps failing; check the server and retry");
    }
    bool acquired = false;
    session_lock_protocol::attempt state;
    try {
      acquired = protocol_->acquire(**pin->conn, mode, deadline, state);
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
    reg->add_holds(*pin, +1);
    record_acquired(*reg, owner, pin.get(), mode);
    return true;
  }
}

void session_lock::record_acquired(session_registry& reg, const std::string& owner,
                                   const std::shared_ptr<pinned_session>& s, lock_mode mode) {
  std::lock_guard lock(mu_);
  auto& mine = mine_[owner];
  if (mine.session != s) {
    // A new session for this owner: levels recorded on an earlier one died with it.
    if (mine.session) reg.clear_on_lost(*mine.session, this);
    mine = acquisition{s, {0, 0}};
    if (options_.on_lost) reg.set_on_lost(*s, this, options_.on_lost);
  }
  ++mine.count[index(mode)];
}

void session_lock::drop_one(session_registry& reg, const std::string& owner, const pinned_session& s, lock_mode mode) {
  std::lock_guard lock(mu_);
  auto it = mine_.find(owner);
  if (it == mine_.end() || it->second.session.get() != &s) return;
  auto& count = it->second.count[index(mode)];
  if (count > 0) --count;
  if (it->second.count[0] == 0 && it->second.count[1] == 0) {
    reg.clear_on_lost(*it->second.session, this);
    mine_.erase(it);
  }
}

void session_lock::release(lock_mode mode) { release_as(owner_token(), mode, false); }

void session_lock::release_as(const std::string& owner, lock_mode mode, bool closing) {
  std::shared_ptr<pinned_session> s;
  std::shared_ptr<session_registry> reg;
  {
    std::lock_guard lock(mu_);
    auto it = mine_.find(owner);
    if (it == mine_.end() || it->second.count[index(mode)] == 0) throw not_held(not_held_message(owner, mode));
    s = it->second.session;
    reg = registry_;
    if (s->pid != process_id()) {
      mine_.erase(it);
      throw not_held(protocol_->description() + " was taken by the parent process; a forked child holds none "
                     "of its parent's session locks");
    }
  }
  const std::string lost_message =
      protocol_->description() + " was lost before this release: its database session died, so the server "
      "freed it then; the work it guarded may have overlapped another holder's";
  reg->pin_existing(*s);
  session_pin pin(*reg, s);
  // A lost session is not waited for: a ping hung on its dead connection may hold s->use for
  // minutes, and there is nothing left to release anyway.
  std::unique_lock use(s->use, std::defer_lock);
  if (reg->lock_use(*s, use, std::nullopt) != use_wait::locked || !s->conn) {
    drop_one(*reg, owner, *s, mode);
    throw not_held(lost_message);
  }
  bool released = false;
  try {
    released = protocol_->release(**s->conn, mode);
  } catch (const connection_error&) {
    auto lost = reg->lose(*s);
    drop_one(*reg, owner, *s, mode);
    use.unlock();
    run_callbacks(lost);
    throw not_held(lost_message);
  } catch (const lock_lost&) {
    // The server session that holds the level is out of reach (protocol_->release says why).
    auto lost = reg->lose(*s);
    drop_one(*reg, owner, *s, mode);
    use.unlock();
    run_callbacks(lost);
    throw;
  } catch (const std::exception&) {
    if (closing) {
      // The object is going away: forget the level, and let the session be reset (all its
      // locks dropped) before the pool reuses it.
      s->dirty = true;
      reg->add_holds(*s, -1);
      drop_one(*reg, owner, *s, mode);
    }
    throw;
  }
  reg->add_holds(*s, -1);
  drop_one(*reg, owner, *s, mode);
  if (!released) {
    s->dirty = true;  // the server and the bookkeeping disagree: reset before reuse
    throw not_held("the server reports that its session did not hold " + protocol_->description() +
                   " any more (was it released behind sqllock's back?)");
  }
}

void session_lock::unlock(lock_mode mode) noexcept {
  try {
    release(mode);
  } catch (const std::exception& e) {
    try {
      options_.on_unlock_error(e);
    } catch (...) {
    }
  }
}

bool session_lock::holds(lock_mode mode) const noexcept {
  try {
    std::lock_guard lock(mu_);
    auto it = mine_.find(owner_token());
    if (it == mine_.end() || it->second.count[index(mode)] == 0) return false;
    const auto& s = *it->second.session;
    return s.pid == process_id() && registry_ && !registry_->view(s).lost;
  } catch (...) {
    return false;
  }
}

std::int64_t session_lock::count(lock_mode mode) const noexcept {
  try {
    std::lock_guard lock(mu_);
    auto it = mine_.find(owner_token());
    return it == mine_.end() ? 0 : it->second.count[index(mode)];
  } catch (...) {
    return 0;
  }
}

std::stop_token session_lock::lost_token() const {
  std::lock_guard lock(mu_);
  auto it = mine_.find(owner_token());
  if (it == mine_.end() || !registry_)
    throw not_held("lost_token(): " + protocol_->description() + " is not held by the caller");
  return registry_->view(*it->second.session).stop;
}

std::string session_lock::not_held_message(const std::string& owner, lock_mode mode) const {  // requires mu_
  std::string what = std::string(mode_name(mode)) + protocol_->description();
  if (mine_.count(owner))  // the owner holds levels, of the other mode only
    return what + " is not held by the caller, which holds it in " +
           (mode == lock_mode::shared ? "exclusive" : "shared") + " mode only: release that mode instead";
  if (options_.owner.empty() && !mine_.empty())
    return what + " is not held by the calling thread (another thread of this object holds it); unlock it "
                  "from the thread that locked it, or set session_lock_options::owner";
  return what + " is not held by the caller (unlock without lock, or more unlocks than locks)";
}

}  // namespace sqllock::detail
