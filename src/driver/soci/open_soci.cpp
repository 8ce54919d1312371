// Opens a SOCI session for a sqlite:, soci+postgresql: or soci+mysql: URI.
#include <memory>
#include <string>

#include "driver/open.hpp"
#include "driver/soci/soci_backend.hpp"
#include "driver/soci/soci_connection.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

namespace {

// A client library's connect failure on one line, without SOCI's generic lead-in.
std::string connect_failure(const soci::soci_error& e) {
  std::string text = e.get_error_message();
  constexpr std::string_view lead_in = "Cannot establish connection to the database.";
  if (text.rfind(lead_in, 0) == 0) text.erase(0, lead_in.size());
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\t') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  return soci_trimmed(out);
}

}  // namespace

std::unique_ptr<connection> open_soci(const connection_spec& spec, std::chrono::milliseconds timeout) {
  std::unique_ptr<soci_backend> backend;
  try {
    switch (spec.dialect) {
      case dialect_kind::postgresql: backend = open_soci_postgresql(spec, timeout); break;
      case dialect_kind::mysql: backend = open_soci_mysql(spec, timeout); break;
      case dialect_kind::sqlite: backend = open_soci_sqlite(spec); break;
    }
  } catch (const soci::soci_error& e) {
    // Unreachable servers, refused logins, unknown databases and unopenable files alike. None of
    // the client libraries' messages contain the password.
    throw connection_error("cannot connect to " + spec.display + ": " + connect_failure(e) +
                           (spec.dialect == dialect_kind::sqlite
                                ? " (check that the file's directory exists and is writable)"
                                : " (check that the server is running and the URI's host, port, user, "
                                  "password and database)"));
  }
  if (!backend) throw not_supported("the SOCI driver does not serve this dialect");
  return std::make_unique<soci_connection>(std::move(backend), spec.display);
}

}  // namespace sqllock::detail
