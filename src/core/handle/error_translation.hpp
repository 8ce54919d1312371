// How the core turns a failure a driver reported into the exception the caller should catch
// (sqllock/error.hpp): one place for the transaction-rollback classes (deadlock,
// serialization_failure), the "table missing: run `sqllock migrate`" advice, and the
// broken-connection-after-a-write rule (outcome_unknown). Every store and lock kind calls these.
#pragma once

#include <string>
#include <string_view>

#include "sqllock/database.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

// What the failed statement was doing, for the messages of the translated errors.
struct failure_context {
  // The unit that failed, leading the message, e.g. "row lock 'x' could not be taken".
  std::string_view subject = "a lock statement failed";
  // What the server rolled back when it chose this session as a victim.
  std::string_view rolled_back = "the statement (nothing of it was kept)";
  // What the caller should run again after a rollback.
  std::string_view retry = "the call";
  // The table whose absence means migrations have not run, and what it needs (may be empty).
  std::string_view table = "the lock table";
  std::string_view needs = "";
};

// Call inside a handler of `e`, an error the server of `dialect` reported. Throws what the caller
// should catch: schema_error when the table is missing (saying to run `sqllock migrate`); deadlock
// or serialization_failure when the server chose this session as a victim (message led by
// context.subject, same SQLSTATE and vendor code); otherwise rethrows e itself (`throw;`, so a
// permission_denied stays one). An e that already is a transaction_rollback is rethrown as it is.
[[noreturn]] void rethrow_classified(dialect_kind dialect, const backend_error& e, const failure_context& context = {});

// True when `e` says the server chose this session as a victim and rolled back its transaction
// (or, for GET_LOCK, refused the wait): error_kind::deadlock or serialization.
bool is_transaction_rollback(dialect_kind dialect, const backend_error& e);

// Throws deadlock or serialization_failure, as rethrow_classified does, when `e` is a transaction
// rollback; returns otherwise (for statements whose other errors are the caller's own, such as a
// missing table of the application's).
void throw_if_rolled_back(dialect_kind dialect, const backend_error& e, const failure_context& context);

// Throws an error reported earlier again, with a new message: deadlock or serialization_failure
// when the SQLSTATE and vendor code say so, backend_error otherwise.
[[noreturn]] void throw_server_error(dialect_kind dialect, const std::string& message, const std::string& sqlstate,
                                     long long vendor_code);

// Call inside a handler of `e`: the connection broke after a statement that changes state was
// sent. Throws outcome_unknown with e's message and `unknown` (what may or may not have taken
// effect, and what to do); an e that already is outcome_unknown is rethrown as it is.
[[noreturn]] void rethrow_outcome_unknown(const connection_error& e, std::string_view unknown);

// True when `e` ended a lock wait by a timeout: lock_timeout / innodb_lock_wait_timeout / a
// refused NOWAIT (lock_not_available) or statement_timeout (query_canceled). Either can fire in
// the instant the lock is granted, which the callers check.
bool ended_by_timeout(dialect_kind dialect, const backend_error& e);

}  // namespace sqllock::detail
