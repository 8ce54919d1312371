// The MySQL Connector/C++ 1.1 driver: one MySQL / MariaDB session behind sqllock's driver seam.
//
// The session is opened with automatic reconnection off (a silent reconnect would drop GET_LOCK
// locks without anyone noticing), affected rows counting changed rows only (CLIENT_FOUND_ROWS
// off: an UPDATE that changes nothing reports 0); see open_mysql.cpp. Strict SQL mode and UTC are
// the dialect's session set-up (dialect/dialect.hpp), which core/handle/open_session.cpp runs.
// Like every connection, use it from one thread at a time.
// Connector/C++ types are only forward-declared here, to keep its Boost-laden headers inside the
// driver's .cpp files.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "driver/connection.hpp"
#include "driver/socket_discovery.hpp"
#include "driver/statement_cache.hpp"

namespace sql {
class Connection;
class PreparedStatement;
class SQLException;
}  // namespace sql

namespace sqllock::detail {

class mysql_connection final : public connection {
 public:
  // Takes an open session. `display` (the URI without its password) names it in errors. `socket`:
  // the session's socket when it could be identified (driver/socket_discovery.hpp).
  mysql_connection(std::unique_ptr<sql::Connection> native, std::string display,
                   std::optional<found_socket> socket = std::nullopt);
  // Uses an application's session without owning it (the adapters): never closes it, and runs
  // none of sqllock's session setup on it.
  mysql_connection(sql::Connection& borrowed, std::string display);
  ~mysql_connection() override;

  result exec(std::string_view sql, std::span<const value> params) override;
  result exec_direct(std::string_view sql) override;
  void prepare(std::string_view sql, std::size_t param_count) override;
  bool broken() const noexcept override { return broken_; }
  int socket() const noexcept override { return broken_ || !socket_ ? -1 : socket_still_open(*socket_); }
  void abandon() noexcept override;
  std::string_view driver_name() const noexcept override { return "mysqlcppconn"; }

 private:
  template <class F>
  result guarded(F&& run);
  // Throws the sqllock exception for `e`, marking the connection broken when it is lost.
  [[noreturn]] void report(const sql::SQLException& e);
  // Whether the session is gone; pings the server (Connector/C++ 1.1's isClosed() does).
  bool session_closed() noexcept;

  std::unique_ptr<sql::Connection> native_;
  // Declared after native_: prepared statements must be closed before their connection.
  statement_cache<std::unique_ptr<sql::PreparedStatement>> statements_;
  // The cache entry of `sql`, prepared on the server on first use (a round trip).
  statement_cache<std::unique_ptr<sql::PreparedStatement>>::entry& cached(std::string_view sql,
                                                                          std::size_t param_count);
  std::string display_;
  bool broken_ = false;
  bool borrowed_ = false;  // native_ belongs to the application: released, never deleted
  std::optional<found_socket> socket_;
};

}  // namespace sqllock::detail
