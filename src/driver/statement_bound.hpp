// How long a statement may take: the bound the statement timer (statement_timer.hpp) enforces.
//
// Every connection sqllock opens has a bound (database_options::statement_timeout, or the URI's
// ?statement_timeout=): a statement that has not returned that long after it was sent is cut off.
// The calling thread can change the bound of the statements it sends for a while, with scopes;
// they nest, and each restores what was before when it ends:
//   - sqllock::statement_deadline (public, include/sqllock/statement_deadline.hpp): the caller
//     must be done by a deadline (a timed acquire, `sqllock run --wait`): no statement outlives
//     that deadline plus kDeadlineGrace, even when the bound would allow more. The nearest
//     deadline of nested scopes wins.
//   - server_wait_scope: the statements ask the server to wait (GET_LOCK(name, 60), a lock_timeout
//     wait): that wait is added to their bound, so a legitimate wait is never cut off.
//   - unbounded_statements_scope: statements that are the application's own (its SQL in a row
//     lock's transaction) or may rightly take long (migrations' DDL): no bound at all.
// A deadline scope still applies inside the other two.
#pragma once

#include <chrono>

namespace sqllock::detail {

using steady_time = std::chrono::steady_clock::time_point;

// What a statement sent just before a caller's deadline gets to finish: a round trip on a slow
// network, far below any bound a user would pick.
inline constexpr std::chrono::milliseconds kDeadlineGrace{1000};

// The limits in force for the statements the calling thread sends now.
struct statement_limits {
  steady_time not_after = steady_time::max();  // a caller's deadline plus kDeadlineGrace
  std::chrono::milliseconds server_wait{0};    // added to the connection's bound
  bool unbounded = false;
};

// The calling thread's limits (thread-local).
statement_limits& this_thread_statement_limits() noexcept;

// When a statement sent at `now` on a connection whose bound is `bound` must have returned:
// at is time_point::max() when nothing bounds it; by_caller tells that a caller's deadline, not
// the bound, decided it.
struct statement_due {
  steady_time at;
  bool by_caller;
};
statement_due deadline_of_statement(steady_time now, std::chrono::milliseconds bound) noexcept;

// `deadline` plus kDeadlineGrace, saturated at time_point::max().
steady_time with_grace(steady_time deadline) noexcept;

// See the comment at the top. Not copyable; use on one thread, as a local variable.
class server_wait_scope {
 public:
  template <class Rep, class Period>
  explicit server_wait_scope(std::chrono::duration<Rep, Period> wait) noexcept
      : saved_(this_thread_statement_limits().server_wait) {
    this_thread_statement_limits().server_wait = std::chrono::ceil<std::chrono::milliseconds>(wait);
  }
  ~server_wait_scope() { this_thread_statement_limits().server_wait = saved_; }
  server_wait_scope(const server_wait_scope&) = delete;
  server_wait_scope& operator=(const server_wait_scope&) = delete;

 private:
  std::chrono::milliseconds saved_;
};

class unbounded_statements_scope {
 public:
  unbounded_statements_scope() noexcept : saved_(this_thread_statement_limits().unbounded) {
    this_thread_statement_limits().unbounded = true;
  }
  ~unbounded_statements_scope() { this_thread_statement_limits().unbounded = saved_; }
  unbounded_statements_scope(const unbounded_statements_scope&) = delete;
  unbounded_statements_scope& operator=(const unbounded_statements_scope&) = delete;

 private:
  bool saved_;
};

}  // namespace sqllock::detail
