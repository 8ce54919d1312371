// A loopback TCP port on which no database answers, for tests of an unreachable database.
#pragma once

#include <string>
#include <string_view>

namespace sqllock::test {

// The port stays bound for the object's life, so no other process can take it meanwhile.
class dead_port {
 public:
  // Bound but not listening: a connection is refused at once. With `listening`, connections are
  // accepted into the backlog and never answered, so a client hangs in its handshake until its
  // connect timeout. Throws std::system_error when no socket can be bound.
  explicit dead_port(bool listening = false);
  ~dead_port();
  dead_port(const dead_port&) = delete;
  dead_port& operator=(const dead_port&) = delete;

  int port() const { return port_; }
  // A URI of a database on this port: `scheme`://nobody@127.0.0.1:PORT/x (e.g. "postgresql",
  // "mysql", "soci+postgresql").
  std::string uri(std::string_view scheme) const;

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace sqllock::test
