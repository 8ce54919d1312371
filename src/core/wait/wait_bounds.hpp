// The statement bounds of the lock kinds' waits (driver/statement_bound.hpp applied to locks):
// what the core tells the statement timer about the statements a wait sends.
#pragma once

#include <chrono>
#include <optional>

#include "driver/statement_bound.hpp"
#include "sqllock/statement_deadline.hpp"

namespace sqllock::detail {

// For a whole timed acquire: no statement it sends outlives `deadline` plus kDeadlineGrace
// (nullopt: the connection's own bound only).
class caller_deadline {
 public:
  explicit caller_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) noexcept
      : scope_(deadline.value_or(std::chrono::steady_clock::time_point::max())) {}

 private:
  sqllock::statement_deadline scope_;
};

// For a statement that asks the server to wait for a lock until `deadline` (nullopt: for as long
// as it takes, so the statement has no bound at all): the wait is added to its bound, and the
// deadline plus kDeadlineGrace caps it.
class server_wait_bounds {
 public:
  explicit server_wait_bounds(std::optional<std::chrono::steady_clock::time_point> deadline) {
    if (!deadline) {
      unbounded_.emplace();
      return;
    }
    caller_.emplace(*deadline);
    wait_.emplace(std::max(*deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{}));
  }

 private:
  std::optional<unbounded_statements_scope> unbounded_;
  std::optional<sqllock::statement_deadline> caller_;
  std::optional<server_wait_scope> wait_;
};

}  // namespace sqllock::detail
