// Opens a connection with the client library a URI names.
#pragma once

#include <chrono>
#include <memory>

#include "common/uri.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

// Connects with the driver spec.driver names. Throws not_supported when that driver was not
// built in, connection_error when the server cannot be reached within `timeout`. The session is
// as the client library leaves it: sqllock's own statements need the dialect's session set-up
// first, which core/handle/open_session.hpp adds.
std::unique_ptr<connection> open_driver(const connection_spec& spec, std::chrono::milliseconds timeout);

// One factory per driver; each exists only when its driver is built (SQLLOCK_HAVE_PQXX, …).
std::unique_ptr<connection> open_pqxx(const connection_spec& spec, std::chrono::milliseconds timeout);
std::unique_ptr<connection> open_mysql(const connection_spec& spec, std::chrono::milliseconds timeout);
std::unique_ptr<connection> open_soci(const connection_spec& spec, std::chrono::milliseconds timeout);

}  // namespace sqllock::detail
