// A userspace TCP proxy in front of a test server, for tests of network loss: it forwards every
// connection it accepts to the server and can freeze them — stop carrying bytes both ways while
// keeping both sockets open, as when the network drops packets or the server process is stopped.
// The client then sees no error at all: its statements just never get an answer.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace sqllock::test {

class tcp_proxy {
 public:
  // Listens on 127.0.0.1 (a free port) and forwards to the host and port of `server_uri`, a
  // scheme://[user[:password]@]host:port/… URI. Throws std::invalid_argument for a URI without a
  // port, std::system_error when the socket or the thread cannot be had.
  explicit tcp_proxy(const std::string& server_uri);
  // Closes every connection (the peers see them end).
  ~tcp_proxy();
  tcp_proxy(const tcp_proxy&) = delete;
  tcp_proxy& operator=(const tcp_proxy&) = delete;

  // `server_uri` with its host and port replaced by this proxy's.
  const std::string& uri() const;
  int port() const;

  // Connections accepted so far; the first is number 0.
  std::size_t accepted() const;
  // Stops forwarding on every connection open now, once any chunk being forwarded is through;
  // bytes queue up in the kernel. Connections accepted later forward normally.
  void freeze();
  // Forwards on frozen connections again, queued bytes first.
  void thaw();
  // Closes connection `index` on both sides, as when a peer goes away. No-op if already closed.
  void cut(std::size_t index);

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace sqllock::test
