// A userspace TCP proxy in front of a test server, for tests of network loss: it forwards every
// connection it accepts to the server and can freeze them — stop carrying bytes both ways while
// keeping both sockets open, as when the network drops packets or the server process is stopped.
// The client then sees no error at all: its statements just never get an answer.
//
// It can also slow the traffic down: a steady delay per direction, and retransmission-like
// stalls. A TCP stream cannot lose bytes, so a proxy cannot drop packets; what packet loss does
// to a stream is hold everything behind the lost segment until the retransmission arrives, and
// that is what a stall is: a chunk held back `stall` longer, with the chunks behind it in its
// direction waiting too.
#pragma once

#include <chrono>
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
  // A silent partition: freeze(), and every connection accepted from now on starts frozen too
  // (the client's connect succeeds locally, but no byte reaches the server or comes back), until
  // thaw(). A peer that closes its end meanwhile is not noticed until then either.
  void partition();
  // Forwards on frozen connections again, queued bytes first; ends a partition().
  void thaw();
  // Closes connection `index` on both sides, as when a peer goes away. No-op if already closed.
  void cut(std::size_t index);

  // Holds every chunk read from now on for `to_server` (client → server) or `to_client` (server →
  // client) before passing it on, in order; zero (the default) forwards at once. A closed end is
  // passed on after the bytes before it.
  void set_delay(std::chrono::milliseconds to_server, std::chrono::milliseconds to_client);
  // Each chunk read from now on (either direction) is held back `stall` more with probability
  // `chance` (0–1), and the later chunks of its direction wait behind it: the stand-in for packet
  // loss described above. A chance of 0 (the default) turns it off.
  void set_stalls(double chance, std::chrono::milliseconds stall);

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace sqllock::test
