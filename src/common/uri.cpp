#include "common/uri.hpp"

#include <cctype>
#include <charconv>

#include "common/message_text.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

constexpr std::string_view kAcceptedForms =
    "accepted forms: postgresql://user:pass@host:5432/db, mysql://user:pass@host:3306/db, "
    "mariadb://…, sqlite:///abs/path.db, sqlite:relative/path.db, soci+postgresql://…, "
    "soci+mysql://…";

[[noreturn]] void bad_uri(std::string_view display, std::string_view why) {
  throw invalid_argument("invalid database URI '" + message_text(display) + "': " + message_text(why) + " (" +
                         std::string(kAcceptedForms) + ")");
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s, std::string_view display) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) bad_uri(display, "truncated %-escape");
    const int hi = hex_value(s[i + 1]);
    const int lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) bad_uri(display, "bad %-escape");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  if (out.find('\0') != std::string::npos) bad_uri(display, "%00 is not allowed");
  return out;
}

// The URI with the password between ':' and '@' of the authority replaced by ***. When the
// authority has no '@' but one follows, the password itself may hold an unescaped '/' or '?' (a
// malformed URI whose error message must still not show it): then everything from the first ':'
// up to the last '@' is hidden. A valid URI with a port, no user and '@' in its path or query is
// over-redacted that way, which only shortens its display.
std::string redact(std::string_view uri) {
  const auto scheme_end = uri.find("://");
  if (scheme_end == std::string_view::npos) return std::string(uri);
  const auto auth_begin = scheme_end + 3;
  const auto auth_end = uri.find_first_of("/?", auth_begin);
  auto authority = uri.substr(auth_begin,
                              auth_end == std::string_view::npos ? std::string_view::npos : auth_end - auth_begin);
  auto at = authority.rfind('@');
  if (at == std::string_view::npos) {
    authority = uri.substr(auth_begin);
    at = authority.rfind('@');
  }
  if (at == std::string_view::npos) return std::string(uri);
  const auto colon = authority.substr(0, at).find(':');
  if (colon == std::string_view::npos) return std::string(uri);
  std::string out(uri.substr(0, auth_begin + colon + 1));
  out += "***";
  out += uri.substr(auth_begin + at);
  return out;
}

int check_port(std::string_view port, std::string_view display) {
  int value = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || p != port.data() + port.size() || value <= 0 || value > 65535)
    bad_uri(display, "port must be a number from 1 to 65535");
  return value;
}

// The query parameters that are sqllock's own (connection_spec::prepare_statements, galera_pinned).
constexpr std::string_view kOwnParams[] = {"prepare", "galera", "statement_timeout"};

bool own_param(std::string_view key) {
  for (auto own : kOwnParams)
    if (key == own) return true;
  return false;
}

// `uri` without the query items whose key is one of sqllock's own.
std::string without_own_params(std::string_view uri) {
  const auto q = uri.find('?');
  if (q == std::string_view::npos) return std::string(uri);
  std::string out(uri.substr(0, q));
  std::string_view query = uri.substr(q + 1);
  char separator = '?';
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (item.empty() || own_param(item.substr(0, item.find('=')))) continue;
    out += separator;
    out += item;
    separator = '&';
  }
  return out;
}

// ?statement_timeout=: a whole number with a unit (ms, s, m; none: seconds), 1ms to 24h.
std::chrono::milliseconds statement_timeout_value(std::string_view text, std::string_view display) {
  long long number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  const std::string_view unit = text.substr(static_cast<std::size_t>(end - text.data()));
  long long scale = 0;
  if (unit == "ms")
    scale = 1;
  else if (unit.empty() || unit == "s")
    scale = 1000;
  else if (unit == "m")
    scale = 60000;
  constexpr long long kMaxMs = 24LL * 3600 * 1000;
  if (ec != std::errc() || end == text.data() || scale == 0 || number <= 0 || number > kMaxMs / scale)
    bad_uri(display, "?statement_timeout= must be a duration from 1ms to 24h, such as 500ms, 10s or 2m");
  return std::chrono::milliseconds(number * scale);
}

// Reads and checks sqllock's own query parameters into `spec`.
void read_own_params(connection_spec& spec) {
  for (const auto& [key, value] : spec.params) {
    if (key == "prepare") {
      if (spec.dialect != dialect_kind::postgresql)
        bad_uri(spec.display, "?prepare= applies to postgresql:// URIs only");
      if (value != "on" && value != "off") bad_uri(spec.display, "?prepare= must be on or off");
      spec.prepare_statements = value == "on";
    } else if (key == "galera") {
      if (spec.dialect != dialect_kind::mysql)
        bad_uri(spec.display, "?galera= applies to mysql:// and mariadb:// URIs only");
      if (value != "pinned") bad_uri(spec.display, "?galera= takes one value, pinned");
      spec.galera_pinned = true;
    } else if (key == "statement_timeout") {
      spec.statement_timeout = statement_timeout_value(value, spec.display);
    }
  }
}

void parse_server_uri(std::string_view rest, connection_spec& spec) {
  // rest = [user[:password]@]host[:port][/database][?k=v&…]
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view path;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    const auto userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (auto colon = userinfo.find(':'); colon != std::string_view::npos) {
      spec.user = percent_decode(userinfo.substr(0, colon), spec.display);
      spec.password = percent_decode(userinfo.substr(colon + 1), spec.display);
    } else {
      spec.user = percent_decode(userinfo, spec.display);
    }
  }
  std::string_view host = rest;
  std::string_view port;
  if (host.find(',') != std::string_view::npos) {
    // libpq's multi-host form, host1:port1,host2:port2 (PostgreSQL only): the list goes to libpq
    // as written; each entry's port is checked here.
    if (spec.dialect != dialect_kind::postgresql)
      bad_uri(spec.display, "a list of hosts (h1:p1,h2:p2) needs a postgresql:// URI");
    spec.host = percent_decode(host, spec.display);
    std::string_view list = host;
    while (true) {
      const auto comma = list.find(',');
      std::string_view entry = list.substr(0, comma);
      if (entry.empty()) bad_uri(spec.display, "an empty entry in the list of hosts");
      if (entry.front() == '[') {
        const auto close = entry.find(']');
        if (close == std::string_view::npos) bad_uri(spec.display, "unclosed '[' in host");
        entry.remove_prefix(close + 1);
        if (!entry.empty() && entry.front() != ':') bad_uri(spec.display, "junk after ']'");
      } else if (const auto colon = entry.rfind(':'); colon != std::string_view::npos) {
        entry.remove_prefix(colon);
      } else {
        entry = {};
      }
      if (!entry.empty()) check_port(entry.substr(1), spec.display);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  } else if (!host.empty() && host.front() == '[') {  // [IPv6]:port
    const auto close = host.find(']');
    if (close == std::string_view::npos) bad_uri(spec.display, "unclosed '[' in host");
    spec.host = std::string(host.substr(1, close - 1));
    const auto tail = host.substr(close + 1);
    if (!tail.empty() && tail.front() != ':') bad_uri(spec.display, "junk after ']'");
    if (!tail.empty()) port = tail.substr(1);
  } else {
    if (auto colon = host.rfind(':'); colon != std::string_view::npos) {
      port = host.substr(colon + 1);
      host = host.substr(0, colon);
    }
    spec.host = percent_decode(host, spec.display);
  }
  if (port.data() != nullptr) spec.port = check_port(port, spec.display);
  spec.database = percent_decode(path, spec.display);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    // The pair is not echoed: in a malformed URI it may be part of a password.
    if (eq == std::string_view::npos) bad_uri(spec.display, "a query parameter has no '=' (use ?key=value)");
    spec.params.emplace_back(percent_decode(pair.substr(0, eq), spec.display),
                             percent_decode(pair.substr(eq + 1), spec.display));
  }
  if (spec.host.empty() && !spec.param("socket") && !spec.param("host"))
    bad_uri(spec.display, "a host (or ?socket=/path) is required");
}

}  // namespace

std::optional<std::string> connection_spec::param(std::string_view key) const {
  for (const auto& [k, v] : params)
    if (k == key) return v;
  return std::nullopt;
}

connection_spec parse_uri(std::string_view uri) {
  connection_spec spec;
  spec.display = redact(uri);
  if (uri.empty()) bad_uri(spec.display, "it is empty");
  if (uri.find('\0') != std::string_view::npos) bad_uri(spec.display, "it contains a NUL byte");
  // Raw control characters would end up in the display form and so in every connection error.
  for (const char c : uri)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      bad_uri(spec.display, "it contains a control character; percent-encode it (%0A for a newline)");

  const auto colon = uri.find(':');
  if (colon == std::string_view::npos) bad_uri(spec.display, "no scheme");
  std::string scheme(uri.substr(0, colon));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view after = uri.substr(colon + 1);

  bool via_soci = false;
  if (scheme.rfind("soci+", 0) == 0) {
    via_soci = true;
    scheme.erase(0, 5);
  }

  if (scheme == "sqlite" || scheme == "sqlite3") {
    spec.driver = driver_kind::soci;
    spec.dialect = dialect_kind::sqlite;
    // sqlite:///abs/path → /abs/path; sqlite://rel/path → rel/path; sqlite:rel/path → rel/path.
    std::string_view path = after.substr(0, after.find('?'));
    if (path.substr(0, 2) == "//") path.remove_prefix(2);
    spec.path = percent_decode(path, spec.display);
    if (spec.path.empty()) bad_uri(spec.display, "no SQLite file path");
    spec.native_uri = std::string(uri);
    return spec;
  }

  if (after.substr(0, 2) != "//") bad_uri(spec.display, "expected '//' after the scheme");
  if (scheme == "postgresql" || scheme == "postgres") {
    spec.dialect = dialect_kind::postgresql;
    spec.driver = via_soci ? driver_kind::soci : driver_kind::pqxx;
  } else if (scheme == "mysql" || scheme == "mariadb") {
    spec.dialect = dialect_kind::mysql;
    spec.driver = via_soci ? driver_kind::soci : driver_kind::mysql;
  } else {
    bad_uri(spec.display, "unknown scheme '" + scheme + "'");
  }
  spec.native_uri = std::string(via_soci ? uri.substr(5) : uri);
  if (spec.dialect == dialect_kind::mysql && spec.native_uri.rfind("mariadb", 0) == 0)
    spec.native_uri.replace(0, 7, "mysql");
  parse_server_uri(after.substr(2), spec);
  read_own_params(spec);
  spec.native_uri = without_own_params(spec.native_uri);
  return spec;
}

}  // namespace sqllock::detail
