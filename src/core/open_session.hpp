// Opens a connection for sqllock's own statements.
#pragma once

#include <chrono>
#include <memory>

#include "common/uri.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

// Connects with the driver spec.driver names (driver/open.hpp), then runs the dialect's session
// set-up (dialect/dialect.hpp) on the new session. Throws not_supported when that driver was not
// built in, connection_error when the server cannot be reached within `timeout`, backend_error
// when the server refuses the set-up.
std::unique_ptr<connection> open_connection(const connection_spec& spec, std::chrono::milliseconds timeout);

}  // namespace sqllock::detail
