// Opens a MySQL / MariaDB session through Connector/C++ 1.1 and prepares it for sqllock.
#include <algorithm>
#include <mutex>
#include <string>

#include "driver/mysql/cppconn.hpp"
#include "driver/mysql/mysql_connection.hpp"
#include "driver/open.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// get_driver_instance() initialises the client library and is not thread-safe on its first
// call, while the pool opens connections from many threads: initialise it exactly once.
sql::mysql::MySQL_Driver& driver() {
  static sql::mysql::MySQL_Driver* const instance = sql::mysql::get_mysql_driver_instance();
  return *instance;
}

// Connector/C++'s address form: unix://<path> for ?socket=, else tcp://host:port.
std::string host_address(const connection_spec& spec) {
  if (auto socket = spec.param("socket")) return "unix://" + *socket;
  const bool ipv6 = spec.host.find(':') != std::string::npos;
  return "tcp://" + (ipv6 ? "[" + spec.host + "]" : spec.host) + ":" + std::to_string(spec.port.value_or(3306));
}

// sqllock's own connects to MySQL run one at a time where they can, so that each finds its socket
// unambiguously (driver/socket_discovery.hpp). A connect that cannot have the turn within
// kTurnWait (others are slow to connect: the server is far or down) goes ahead anyway, and finds
// its socket when no other appeared meanwhile; so a connect waits at most kTurnWait longer.
std::timed_mutex connect_turn;
constexpr std::chrono::milliseconds kTurnWait{250};

}  // namespace

std::unique_ptr<connection> open_mysql(const connection_spec& spec, std::chrono::milliseconds timeout) {
  sql::ConnectOptionsMap options;
  options["hostName"] = sql::SQLString(host_address(spec));
  options["userName"] = sql::SQLString(spec.user);
  options["password"] = sql::SQLString(spec.password);
  if (!spec.database.empty()) options["schema"] = sql::SQLString(spec.database);
  // Whole seconds, rounded up; at least 1 because 0 means the library's default.
  options["OPT_CONNECT_TIMEOUT"] = static_cast<int>(std::clamp<long long>((timeout.count() + 999) / 1000, 1, 86400));
  options["OPT_RECONNECT"] = false;      // a new session would silently lose GET_LOCK locks
  options["CLIENT_FOUND_ROWS"] = false;  // affected rows = rows changed, so 0 means "unchanged"
  options["OPT_CHARSET_NAME"] = sql::SQLString("utf8mb4");

  std::unique_lock turn(connect_turn, std::defer_lock);
  (void)turn.try_lock_for(std::min(timeout, kTurnWait));
  const std::vector<ino_t> before = socket_inodes();
  std::unique_ptr<sql::Connection> native;
  try {
    native.reset(driver().connect(options));
  } catch (const sql::SQLException& e) {
    throw connection_error("cannot connect to " + spec.display + ": " + e.what() + " (error " +
                           std::to_string(e.getErrorCode()) +
                           "; check that the server is running and the URI's host, port, user, "
                           "password and database)");
  }
  const auto unix_path = spec.param("socket");
  auto socket = new_socket_to(before, spec.port.value_or(3306), unix_path.value_or(""));
  return std::make_unique<mysql_connection>(std::move(native), spec.display, socket);
}

}  // namespace sqllock::detail
