// The core's transaction toolkit: one way to run a transaction, a savepoint and a lock wait
// setting on a seam connection, and to end them on an error path without hiding the error being
// handled. Every lock kind and store that needs one uses these (row locks, transaction-level
// advisory locks, the reaper, forced release, migrations).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dialect/transaction_sql.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

// Runs `statement` (exec_direct) on an error path: nothing when the connection is broken, and any
// failure is swallowed — the error being handled is the one worth reporting. Returns whether the
// statement ran; false means the session may be left in a state nobody recorded (a transaction
// still open, a setting not undone), so whoever pools the connection must reset it first.
bool exec_quietly(connection& conn, const std::string& statement) noexcept;

// A transaction sqllock runs itself: BEGIN in the constructor, ROLLBACK in the destructor unless
// it was committed or ended. Movable (the moved-from object ends nothing); not thread-safe, like
// the connection.
class transaction {
 public:
  // Sends BEGIN on `conn`, which must be in autocommit. Throws what the connection reports.
  transaction(connection& conn, const transaction_sql& sql);
  // Rolls back quietly (exec_quietly) when still open.
  ~transaction();
  transaction(transaction&& other) noexcept;
  transaction& operator=(transaction&&) = delete;
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;

  // Sends COMMIT; the transaction is over whatever happens. A connection that breaks during it
  // throws outcome_unknown (whether the COMMIT took effect is unknown) with `unknown` saying what
  // that means for the caller; a COMMIT the server refuses is rolled back (quietly: PostgreSQL
  // has ended the transaction already, MySQL may not have) and the error rethrown.
  void commit(std::string_view unknown);
  // Sends ROLLBACK and throws when it fails; the transaction is over either way.
  void rollback();
  // Ends the transaction without keeping anything, as the destructor does. Returns false when the
  // ROLLBACK could not run (see exec_quietly).
  bool end_quietly() noexcept;

  // The connection was lost with the transaction (or handed to code that ends it): nothing is sent
  // from now on, not even by the destructor.
  void forget() noexcept { open_ = false; }

  // True until commit(), rollback(), end_quietly() or forget().
  bool open() const noexcept { return open_; }

 private:
  connection* conn_;
  const transaction_sql* sql_;
  bool open_ = false;
};

// A savepoint inside an open transaction, so that a failed attempt leaves the transaction usable:
// SAVEPOINT in the constructor; rolled back to and released (quietly) in the destructor unless
// kept or undone.
class savepoint {
 public:
  // Sends SAVEPOINT. Throws what the connection reports (outside a transaction PostgreSQL refuses
  // it: error_kind::no_transaction).
  savepoint(connection& conn, const savepoint_sql& sql);
  ~savepoint();
  savepoint(const savepoint&) = delete;
  savepoint& operator=(const savepoint&) = delete;

  // Keeps what was done since the savepoint (RELEASE SAVEPOINT). Throws on failure.
  void keep();
  // Undoes what was done since the savepoint (ROLLBACK TO, then RELEASE). Throws on failure.
  void undo();
  // Like undo(), for error paths: failures are swallowed. Returns whether both statements ran.
  bool undo_quietly() noexcept;

 private:
  connection& conn_;
  const savepoint_sql& sql_;
  bool open_ = true;
};

// Bounds the lock waits of the statements that follow through the dialect's setting (PostgreSQL
// lock_timeout, MySQL innodb_lock_wait_timeout), and undoes the change: by restoring the value it
// replaced (read once, before the first change), by the dialect's reset statement, or not at all
// when the change ends with the transaction it was made in.
// `limit` in `sql`'s unit, rounded up, at least its minimum and at most its maximum (a far
// deadline, e.g. from hours::max(), is cut to what the server accepts): what lock_wait_bound::set
// applies, for a statement that carries its own bound.
std::int64_t lock_wait_units(const lock_wait_sql& sql, std::chrono::steady_clock::duration limit);

class lock_wait_bound {
 public:
  enum class undo_by {
    restore,      // put the connection's own setting back (restore(); after a rollback as needed)
    transaction,  // nothing: the setting is transaction-local and the transaction will end first
  };
  lock_wait_bound(connection& conn, const lock_wait_sql& sql, undo_by undo = undo_by::restore)
      : conn_(conn), sql_(sql), undo_(undo) {}

  // Limits waits to `limit`, rounded up to the dialect's unit, at least its minimum and at most its
  // maximum (a far deadline, e.g. from hours::max(), is cut to what the server accepts).
  void set(std::chrono::steady_clock::duration limit);
  // No limit at all, overriding one the server or role configured.
  void set_unlimited();
  // The shortest wait the dialect can express, for statements without NOWAIT.
  void set_shortest();

  // Undoes the change; nothing to do when none was made (or it ends with the transaction).
  void restore();
  // Like restore(), for error paths: failures are swallowed. Returns false when the setting may
  // still be changed (see exec_quietly).
  bool restore_quietly() noexcept;
  // The transaction or savepoint the change was made in was rolled back. A transaction-local
  // setting went with it; a session setting did not.
  void rolled_back() noexcept;

 private:
  void apply(std::int64_t units);

  connection& conn_;
  const lock_wait_sql& sql_;
  undo_by undo_;
  bool changed_ = false;
  std::optional<std::string> previous_;  // what `get` read, when restoring by value
};

}  // namespace sqllock::detail
