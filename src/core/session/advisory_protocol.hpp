// PostgreSQL advisory locks on a pinned session: the session_lock_protocol of advisory_lock, and
// the helpers the transaction scope shares with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/session/session_lock.hpp"
#include "sqllock/advisory_lock.hpp"

namespace sqllock::detail {

class database_impl;

// The key's parameters: {$1 bigint} or {$1 integer, $2 integer}.
std::vector<value> advisory_key_params(const advisory_key& key);
// The key's parameters followed by `conn`'s session tag, made on first use: the parameters of
// the lock statements (see "Server-session tags" in dialect/session_lock_sql.hpp).
std::vector<value> advisory_lock_params(const advisory_key& key, connection& conn);
// The field a lock statement returned: throws not_supported naming a transaction-mode pooler
// when it is NULL — the statement reached a server session where another connection holds the
// key with a session-level lock, and did nothing.
const field& own_session_or_refuse(const field& f, const std::string& what);
// Index of the key's kind in advisory_sql's arrays.
int advisory_key_index(const advisory_key& key) noexcept;
// True when the field reads as PostgreSQL's boolean true.
bool pg_true(const field& f) noexcept;

// How many waits ended in lock_timeout (or statement_timeout, or a stop's cancel) although
// PostgreSQL had granted the lock — found in pg_locks and reported as acquired. For tests and diagnostics.
std::uint64_t advisory_timeout_grants() noexcept;

// Takes the transaction-level lock inside the caller's open transaction on `conn` (an adapter's
// wrapper around the application's transaction): waiting as long as the transaction's own
// lock_timeout allows (deadline nullopt), not at all (a deadline already past), or until
// `deadline`. Returns false when refused or timed out; the caller's transaction is still usable
// then (a bounded wait runs in a savepoint that is rolled back, taking with it a lock granted as
// the timeout fired), and its lock_timeout is as before. Throws invalid_argument when `dialect`
// is PostgreSQL but no transaction is open, not_supported for other dialects, backend_error /
// connection_error as the connection reports them. A stop on `stop` ends the wait as a timeout
// does: there is no handle to cancel from, so a wait that can be stopped runs as bounded attempts
// (core/wait/statement_cancel.hpp: wait_in_stop_slices), and a stop requested before the call
// leaves one attempt that does not wait.
bool advisory_xact_lock_in_caller_transaction(connection& conn, dialect_kind dialect, const advisory_key& key,
                                              advisory_mode mode,
                                              std::optional<std::chrono::steady_clock::time_point> deadline,
                                              std::stop_token stop = {});

class advisory_protocol final : public session_lock_protocol {
 public:
  // On the handle `impl` (PostgreSQL; a stop's cancel goes through its pool).
  advisory_protocol(database_impl& impl, advisory_key key, std::string description);
  bool acquire(connection& conn, lock_mode mode, std::optional<std::chrono::steady_clock::time_point> deadline,
               std::stop_token stop, attempt& state) override;
  bool release(connection& conn, lock_mode mode) override;
  const std::string& description() const noexcept override { return description_; }
  bool tags_session() const noexcept override { return true; }

 private:
  // Whether this session holds the key in `mode`, by pg_locks.
  bool held_now(connection& conn, lock_mode mode);

  database_impl& impl_;
  const advisory_sql& sql_;
  const dialect_kind dialect_;
  const advisory_key key_;
  const int kind_;
  const std::string description_;
};

}  // namespace sqllock::detail
