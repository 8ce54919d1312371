#include "driver/statement_bound.hpp"

#include <algorithm>

namespace sqllock::detail {

statement_limits& this_thread_statement_limits() noexcept {
  thread_local statement_limits limits;
  return limits;
}

steady_time with_grace(steady_time deadline) noexcept {
  if (deadline >= steady_time::max() - kDeadlineGrace) return steady_time::max();
  return deadline + kDeadlineGrace;
}

statement_due deadline_of_statement(steady_time now, std::chrono::milliseconds bound) noexcept {
  const statement_limits& limits = this_thread_statement_limits();
  steady_time own = steady_time::max();
  if (!limits.unbounded) {
    const auto allowed = bound + limits.server_wait;  // both at most a day or so: no overflow
    if (now < steady_time::max() - allowed) own = now + allowed;
  }
  if (limits.not_after < own) return {limits.not_after, true};
  return {own, false};
}

}  // namespace sqllock::detail
