// sqllock/error.hpp — the exceptions sqllock throws, grouped by what the caller should do next.
//
// Every exception sqllock throws derives from sqllock::error (itself a std::runtime_error), so
// `catch (const sqllock::error&)` catches them all. Driver exceptions (pqxx, Connector/C++, SOCI)
// never escape the library: they are translated into one of the classes below.
//
// Contention is not an error: try_lock() and friends return false when a lock is held elsewhere.
#pragma once

#include "sqllock/export.hpp"

#include <stdexcept>
#include <string>

namespace sqllock {

// Base of every sqllock exception.
class SQLLOCK_API error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller passed a value sqllock cannot use (empty lock name, zero TTL, malformed URI, bad
// table name, ...). Nothing was sent to the database. Fix the input; retrying will not help.
class SQLLOCK_API invalid_argument : public error {
 public:
  using error::error;
};

// The operation needs a feature this database or driver does not have (e.g. advisory locks on
// SQLite). Use another lock kind or another database.
class SQLLOCK_API not_supported : public error {
 public:
  using error::error;
};

// The database could not be reached, or the connection broke before the statement was sent.
// Nothing changed on the server; the operation may be retried.
class SQLLOCK_API connection_error : public error {
 public:
  using error::error;
};

// The connection broke after a statement that changes state was sent, so whether it took effect
// is unknown. For an acquire, the lease may exist on the server until it expires.
class SQLLOCK_API outcome_unknown : public connection_error {
 public:
  using connection_error::connection_error;
};

// The lock table or migration history is missing, outdated, altered or newer than this
// library. Run `sqllock migrate` (or sqllock::migrate) with a matching sqllock version.
class SQLLOCK_API schema_error : public error {
 public:
  using error::error;
};

// An operation needed a lock the caller does not hold (unlock without lock, release by a
// non-owner, over-release, or a lease that was taken over after it expired).
class SQLLOCK_API not_held : public error {
 public:
  using error::error;
};

// A lock the caller held was lost: its lease expired or its session died while it was held.
// Work guarded by the lock must stop; the fencing token lets the protected resource reject it.
class SQLLOCK_API lock_lost : public error {
 public:
  using error::error;
};

// A latch count-down found no armed latch to count (sqllock/latch.hpp), and changed nothing:
// absent() — there is no latch of that name (never created, misspelled, deleted by the reaper, or
// armed with a ttl that ran out): create it first; or !absent() — it is already open (it reached
// zero: more count-downs than the count it was armed with): a count-down too many is a bug in
// the caller's count, and re-arming (try_create) starts the next generation.
class SQLLOCK_API latch_not_armed : public error {
 public:
  latch_not_armed(const std::string& what, bool absent) : error(what), absent_(absent) {}
  // True when the latch is absent, false when it is open.
  bool absent() const noexcept { return absent_; }

 private:
  bool absent_;
};

// The database reported an error sqllock does not map to one of the classes above. Carries the
// SQLSTATE (five characters, or empty when the driver reports none) and the vendor error code.
class SQLLOCK_API backend_error : public error {
 public:
  backend_error(const std::string& what, std::string sqlstate, long long vendor_code)
      : error(what), sqlstate_(std::move(sqlstate)), vendor_code_(vendor_code) {}

  // The five-character SQLSTATE, or "" when unknown.
  const std::string& sqlstate() const noexcept { return sqlstate_; }
  // The server's own error number (MySQL/MariaDB errno, SQLite extended result code), or 0.
  long long vendor_code() const noexcept { return vendor_code_; }

 private:
  std::string sqlstate_;
  long long vendor_code_;
};

// The server ended the unit of work to break a conflict with another session, and nothing that
// unit did was kept: in a transaction sqllock runs (with_row_lock, with_advisory_xact_lock) nothing
// was committed; a lock the call was taking was not taken. Retrying the whole unit — the whole
// with_row_lock call, or the caller's whole transaction — may succeed. Release the other locks the
// caller holds before retrying when it may be part of the conflict. What else the server rolled
// back in a caller's own transaction is said by the function that threw (see the adapters).
// Catchable as backend_error, so code written before this class existed still catches it.
class SQLLOCK_API transaction_rollback : public backend_error {
 public:
  using backend_error::backend_error;
};

// The server chose this session as the victim of a deadlock (PostgreSQL SQLSTATE 40P01; MySQL and
// MariaDB error 1213, which on Galera also reports a certification conflict with another node, and
// MySQL's 3058 for a cycle of GET_LOCK waits). Retry the unit as for transaction_rollback; taking
// locks in one fixed order (for example sorted by name) avoids the cycle.
class SQLLOCK_API deadlock : public transaction_rollback {
 public:
  using transaction_rollback::transaction_rollback;
};

// The server could not serialise this transaction with a concurrent one (PostgreSQL SQLSTATE
// 40001, at REPEATABLE READ or SERIALIZABLE). Retry the unit as for transaction_rollback.
class SQLLOCK_API serialization_failure : public transaction_rollback {
 public:
  using transaction_rollback::transaction_rollback;
};

// The database refused a statement because the connecting role lacks a privilege (PostgreSQL
// SQLSTATE 42501; MySQL/MariaDB "command denied" errors such as 1142). Retrying will not help:
// lock operations need SELECT, INSERT, UPDATE and DELETE on sqllock's tables (and USAGE on the
// fence sequence on PostgreSQL); migrate() needs the tables' owner. The message says which.
class SQLLOCK_API permission_denied : public backend_error {
 public:
  using backend_error::backend_error;
};

}  // namespace sqllock
