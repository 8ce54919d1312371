#include "sqllock/statement_deadline.hpp"

#include <algorithm>

#include "driver/statement_bound.hpp"

namespace sqllock {

statement_deadline::statement_deadline(std::chrono::steady_clock::time_point deadline) noexcept
    : saved_(detail::this_thread_statement_limits().not_after) {
  auto& limits = detail::this_thread_statement_limits();
  // A deadline already passed still allows the one attempt a timed call then makes: the grace
  // counts from now.
  limits.not_after = std::min(limits.not_after,
                              detail::with_grace(std::max(deadline, std::chrono::steady_clock::now())));
}

statement_deadline::~statement_deadline() { detail::this_thread_statement_limits().not_after = saved_; }

}  // namespace sqllock
