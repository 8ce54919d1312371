// Connection-URI handling shared by the drivers that hand a URI to libpq (pqxx, SOCI).
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>

namespace sqllock::detail {

// Returns the libpq URI `uri` with connect_timeout set to `timeout`, rounded up to whole seconds
// (libpq's unit; at least 1, because 0 means "wait forever"). The caller's timeout replaces any
// connect_timeout already in the URI, so that database_options::connect_timeout is the one rule.
// TCP keepalives are turned on too (below) unless the URI has a keepalives* parameter.
inline std::string libpq_uri_with_connect_timeout(std::string_view uri, std::chrono::milliseconds timeout) {
  const long long seconds = std::max<long long>(1, (timeout.count() + 999) / 1000);
  const std::size_t query_start = uri.find('?');
  std::string out(uri.substr(0, query_start));
  char separator = '?';
  if (query_start != std::string_view::npos) {
    std::string_view query = uri.substr(query_start + 1);
    while (!query.empty()) {
      const std::size_t amp = query.find('&');
      const std::string_view item = query.substr(0, amp);
      if (!item.empty() && item.substr(0, item.find('=')) != "connect_timeout") {
        out += separator;
        out += item;
        separator = '&';
      }
      query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    }
  }
  out += separator;
  out += "connect_timeout=" + std::to_string(seconds);
  // TCP keepalives, where the URI sets none of its own: an idle pooled connection whose peer is
  // gone for good (a dead link, a host that vanished) gets a socket error within about a minute,
  // which connection::closed_by_server() sees, so the pool drops it instead of lending it to a
  // statement that would wait out its bound. Never fires while the peer's kernel answers; libpq
  // ignores it on Unix sockets. Defence in depth: the statement bound does not rely on it.
  if (out.find("keepalives", out.find('?')) == std::string::npos)
    out += "&keepalives=1&keepalives_idle=30&keepalives_interval=10&keepalives_count=3";
  return out;
}

}  // namespace sqllock::detail
