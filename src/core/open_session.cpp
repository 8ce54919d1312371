#include "core/open_session.hpp"

#include <algorithm>

#include "dialect/dialect.hpp"
#include "driver/bounded_connection.hpp"
#include "driver/open.hpp"
#include "driver/statement_bound.hpp"

namespace sqllock::detail {

std::unique_ptr<connection> open_connection(const connection_spec& spec, std::chrono::milliseconds timeout,
                                            std::chrono::milliseconds statement_timeout) {
  const auto now = std::chrono::steady_clock::now();
  if (const auto not_after = this_thread_statement_limits().not_after; not_after != steady_time::max()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(std::max(not_after - now, steady_time::duration{}));
    timeout = std::min(timeout, std::max(left, std::chrono::milliseconds(1000)));
  }
  auto conn = std::make_unique<bounded_connection>(open_driver(spec, timeout), statement_timeout,
                                                   statement_timer::process(), spec.display);
  for (std::string_view statement : session_setup(spec.dialect)) conn->exec_direct(statement);
  return conn;
}

}  // namespace sqllock::detail
