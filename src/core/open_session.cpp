#include "core/open_session.hpp"

#include "dialect/dialect.hpp"
#include "driver/open.hpp"

namespace sqllock::detail {

std::unique_ptr<connection> open_connection(const connection_spec& spec, std::chrono::milliseconds timeout) {
  auto conn = open_driver(spec, timeout);
  for (std::string_view statement : session_setup(spec.dialect)) conn->exec_direct(statement);
  return conn;
}

}  // namespace sqllock::detail
