// sqllock/statement_deadline.hpp — making a stretch of code end by a deadline, whatever the network
// does. For callers that run their own waiting loop around try_lock() (as `sqllock run --wait`
// does); the timed calls (try_lock_for, try_lock_until, try_with_…_for) do this by themselves.
//
// Every statement sqllock sends has a bound (database_options::statement_timeout, 10 s by
// default): one still unanswered then is cut off, and the call throws connection_error, or
// outcome_unknown when the statement may have changed something. While a statement_deadline
// lives, the statements the calling thread sends are also cut off 1 s (a grace for the last
// round trip) after its deadline, if that comes sooner; connecting waits no longer either (but
// at least 1 s). Nested objects: the nearest deadline wins, and each restores what was in force
// before when it is destroyed.
//
//   const auto deadline = std::chrono::steady_clock::now() + wait;
//   sqllock::statement_deadline bound(deadline);
//   while (!lock.try_lock()) { if (steady_clock::now() >= deadline) return false; sleep(…); }
#pragma once

#include "sqllock/export.hpp"

#include <chrono>

namespace sqllock {

class SQLLOCK_API statement_deadline {
 public:
  // Bounds the calling thread's statements by `deadline` (plus 1 s) until destroyed; a deadline
  // already passed, by now plus 1 s (room for one attempt). steady_clock::time_point::max()
  // bounds nothing more. Never throws.
  explicit statement_deadline(std::chrono::steady_clock::time_point deadline) noexcept;
  // Restores the bound in force before. Destroy it on the thread that made it (a local variable).
  ~statement_deadline();
  statement_deadline(const statement_deadline&) = delete;
  statement_deadline& operator=(const statement_deadline&) = delete;

 private:
  std::chrono::steady_clock::time_point saved_;
};

}  // namespace sqllock
