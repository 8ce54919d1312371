// libFuzzer target: sqllock::detail::parse_uri (src/common/uri.cpp) on arbitrary bytes.
//
// Besides crashes and sanitizer reports, it checks what callers rely on: a bad URI is refused with
// invalid_argument (never another exception) whose message is one line; an accepted URI has a
// consistent driver and dialect, a port in 1–65535, no NUL in any decoded part, a host or socket
// for servers and a path for SQLite; and the password never appears in the display form or in the
// error message.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/uri.hpp"
#include "sqllock/error.hpp"

namespace {

using sqllock::dialect_kind;
using sqllock::detail::connection_spec;
using sqllock::detail::driver_kind;

[[noreturn]] void fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "fuzz_uri: %s; input (%zu bytes): %.*s\n", what, input.size(), static_cast<int>(input.size()),
               input.data());
  std::abort();
}

bool has_nul(const std::string& s) { return s.find('\0') != std::string::npos; }

// The userinfo password as written in `uri`: after the first ':' of the userinfo, which ends at
// the authority's last '@' — or, when the authority (up to the first '/' or '?') has none, at the
// last '@' of the URI, since a malformed password may contain '/' or '?' itself.
std::string_view written_password(std::string_view uri) {
  const auto scheme_end = uri.find("://");
  if (scheme_end == std::string_view::npos) return {};
  const auto rest = uri.substr(scheme_end + 3);
  auto at = rest.substr(0, rest.find_first_of("/?")).rfind('@');
  if (at == std::string_view::npos) at = rest.rfind('@');
  if (at == std::string_view::npos) return {};
  const auto userinfo = rest.substr(0, at);
  const auto colon = userinfo.find(':');
  if (colon == std::string_view::npos) return {};
  return userinfo.substr(colon + 1);
}

std::size_t occurrences(std::string_view haystack, std::string_view needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string_view::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

bool printable_ascii(std::string_view s) {
  for (const char c : s)
    if (c < 0x20 || c > 0x7E) return false;
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// The text of every error message that does not come from the input: the accepted forms at its
// end. The password is looked for in the rest (the display form and the reason).
constexpr std::string_view kFixedText =
    " (accepted forms: postgresql://user:pass@host:5432/db, mysql://user:pass@host:3306/db, "
    "mariadb://…, sqlite:///abs/path.db, sqlite:relative/path.db, soci+postgresql://…, soci+mysql://…)";

void check_accepted(const connection_spec& spec, std::string_view uri) {
  if (spec.dialect == dialect_kind::sqlite) {
    if (spec.driver != driver_kind::soci) fail("SQLite through a driver other than SOCI", uri);
    if (spec.path.empty()) fail("SQLite URI accepted without a path", uri);
    if (has_nul(spec.path)) fail("NUL in the SQLite path", uri);
    return;
  }
  if (spec.driver == driver_kind::pqxx && spec.dialect != dialect_kind::postgresql)
    fail("pqxx for non-PostgreSQL", uri);
  if (spec.driver == driver_kind::mysql && spec.dialect != dialect_kind::mysql)
    fail("Connector/C++ for non-MySQL", uri);
  if (spec.port && (*spec.port < 1 || *spec.port > 65535)) fail("port out of range accepted", uri);
  if (spec.host.empty() && !spec.param("socket") && !spec.param("host")) fail("no host and no socket accepted", uri);
  for (const auto* part : {&spec.user, &spec.password, &spec.host, &spec.database})
    if (has_nul(*part)) fail("NUL in a decoded part", uri);
  for (const auto& [k, v] : spec.params)
    if (has_nul(k) || has_nul(v)) fail("NUL in a query parameter", uri);
  if (!spec.password.empty() && spec.display.find("***") == std::string::npos) fail("password not redacted", uri);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view uri(reinterpret_cast<const char*>(data), size);
  // Checked only when finding the password in a message cannot be a coincidence: printable ASCII
  // (shown as written) written exactly once (also ignoring case, as the scheme is lower-cased),
  // holding a character that no fixed text of a message has, with no quote (which could join the
  // end of the quoted URI to the text after it), no backslash (the \xNN escape of a byte the
  // message shows escaped could complete it: "a?\x" in "a?\x00") and not starting with a hex
  // digit (which could join the \xNN escape of a byte before it).
  const std::string_view password = written_password(uri);
  const bool check_password = password.size() >= 4 && printable_ascii(password) && !std::isxdigit(password[0]) &&
                              password.find_first_of("!$^|~") != std::string_view::npos &&
                              password.find_first_of("'@\\") == std::string_view::npos &&
                              occurrences(uri, password) == 1 && occurrences(lower(uri), lower(password)) == 1;
  try {
    const connection_spec spec = sqllock::detail::parse_uri(uri);
    check_accepted(spec, uri);
    if (check_password && spec.display.find(password) != std::string::npos) fail("password in the display form", uri);
  } catch (const sqllock::invalid_argument& e) {
    const std::string_view what = e.what();
    if (what.rfind("invalid database URI", 0) != 0) fail("message does not start with 'invalid database URI'", uri);
    if (what.find('\n') != std::string_view::npos || what.find('\r') != std::string_view::npos)
      fail("message spans lines", uri);
    if (what.size() < kFixedText.size() || what.substr(what.size() - kFixedText.size()) != kFixedText)
      fail("message does not end with the accepted forms", uri);
    if (check_password && what.substr(0, what.size() - kFixedText.size()).find(password) != std::string_view::npos)
      fail("password in the error message", uri);
  }
  // Any other exception escapes to libFuzzer, which reports it as a crash.
  return 0;
}
