// The part advisory_lock and named_lock share: owners, per-object level counts, pinned
// sessions, loss and unlock-error reporting. What differs — the SQL that takes and gives back one
// level — is a session_lock_protocol.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "core/hold/ownership.hpp"
#include "core/session/pinned_session.hpp"
#include "dialect/session_lock_sql.hpp"
#include "driver/connection.hpp"
#include "sqllock/database.hpp"
#include "sqllock/session_lock_options.hpp"

namespace sqllock::detail {

// The statements of one lock kind on one key, run on a pinned session. Implementations throw
// what the driver throws (connection_error when the session broke, backend_error otherwise).
class session_lock_protocol {
 public:
  virtual ~session_lock_protocol() = default;
  // What an acquire attempt tells its caller besides the result.
  struct attempt {
    // The session may now hold something the caller will not record: reset it before reuse.
    bool dirty = false;
    // The server has answered at least one statement of this attempt. The first statement never
    // waits, so a connection that fails before any answer was dead already (e.g. a pooled
    // connection that outlived a server restart), not killed during a wait.
    bool answered = false;
  };
  // Takes one level in `mode`, waiting until `deadline` (nullopt: as long as it takes; a time
  // already past: no wait) or a stop on `stop`, which cancels the waiting statement
  // (core/wait/statement_cancel.hpp). Returns false when the deadline or the stop came first.
  virtual bool acquire(connection& conn, lock_mode mode, std::optional<std::chrono::steady_clock::time_point> deadline,
                       std::stop_token stop, attempt& state) = 0;
  // Gives back one level; false when the server says this session did not hold it.
  virtual bool release(connection& conn, lock_mode mode) = 0;
  // "advisory lock 'job' (key 123)", for messages.
  virtual const std::string& description() const noexcept = 0;
  // True when acquire() tags the server session with the connection's session tag
  // (dialect/session_lock_sql.hpp): the keepalive then also checks that its ping reaches the
  // tagged server session, and declares the session lost when it does not.
  virtual bool tags_session() const noexcept { return false; }
};

// Throws invalid_argument for a keepalive outside 10 ms–1 h (ownership checks the owner key).
void validate_session_lock_options(const session_lock_options& options);

class session_lock {
 public:
  session_lock(const database& db, std::unique_ptr<session_lock_protocol> protocol, session_lock_options options);
  // Releases every level this object holds, for every owner (errors go to on_unlock_error).
  ~session_lock();
  session_lock(const session_lock&) = delete;
  session_lock& operator=(const session_lock&) = delete;

  // One level for the calling owner, waiting until `deadline` (nullopt: forever) or a stop on
  // `stop`. False when either came first (nothing is held then).
  bool acquire(lock_mode mode, std::optional<std::chrono::steady_clock::time_point> deadline,
               std::stop_token stop = {});
  // Gives back one level of the calling owner (see advisory_lock::release for what it throws).
  void release(lock_mode mode);
  // release() that reports failures to on_unlock_error instead of throwing.
  void unlock(lock_mode mode) noexcept;

  bool holds(lock_mode mode) const noexcept;
  std::int64_t count(lock_mode mode) const noexcept;
  std::stop_token lost_token() const;

 private:
  // The owner's session, in this process: a forked child holds none of its parent's levels.
  using levels = owner_levels<std::shared_ptr<pinned_session>>;
  // Gives back one level of `owner`. closing: the object is being destroyed, so a level that
  // cannot be released is forgotten anyway (its session is reset before reuse).
  void release_as(const std::string& owner, lock_mode mode, bool closing);
  // Forgets one level of `owner` if it is recorded on session `s` (after a release, or when lost).
  void drop_one(const std::string& owner, const pinned_session& s, lock_mode mode);
  // Why `owner` cannot release a level of `mode` (the message of not_held).
  std::string not_held_message(const std::string& owner, lock_mode mode) const;
  static std::size_t index(lock_mode m) noexcept { return static_cast<std::size_t>(m); }

  const database db_;
  database_impl& impl_;
  const std::unique_ptr<session_lock_protocol> protocol_;
  session_lock_options options_;
  const ownership who_;
  levels mine_;
};

}  // namespace sqllock::detail
