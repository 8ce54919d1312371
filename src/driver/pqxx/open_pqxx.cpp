// Opens a libpqxx connection from a libpq URI.
#include <string>

#include <pqxx/except>

#include "driver/libpq_uri.hpp"
#include "driver/open.hpp"
#include "driver/pqxx/pqxx_connection.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
std::unique_ptr<connection> open_pqxx(const connection_spec& spec, std::chrono::milliseconds timeout) {
  std::unique_ptr<pqxx::connection> native;
  try {
    native = std::make_unique<pqxx::connection>(libpq_uri_with_connect_timeout(spec.native_uri, timeout));
  } catch (const pqxx::pqxx_exception& e) {
    // libpq reports unreachable servers, refused logins and unknown databases alike; none of
    // its messages contain the password.
    throw connection_error("cannot connect to " + spec.display + ": " + pqxx_message(e.base().what()) +
                           " (check that the server is running and the URI's host, port, user, "
                           "password and database)");
  }
  return std::make_unique<pqxx_connection>(std::move(native), spec.display, spec.prepare_statements);
}

}  // namespace sqllock::detail
