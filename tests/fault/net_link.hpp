// A worker process's lock connections, routed through an in-process tcp_proxy
// (support/tcp_proxy.hpp) that the nemesis degrades through the board (fault/board.hpp): a silent
// partition, a stall, a steady delay, retransmission-like stalls. The worker's other handle —
// the one its critical sections write through (fault/worker.hpp) — goes to the server directly,
// so a holder cut off from the lock service still reaches its storage, and the fences must stop
// its stale writes.
#pragma once

#include <cstdint>
#include <string>
#include <thread>

#include "fault/board.hpp"
#include "support/tcp_proxy.hpp"

namespace sqllock::fault {

class net_link {
 public:
  // A proxy to `server_uri`, obeying the orders of board slot `slot` that name this process.
  // Throws what tcp_proxy's constructor throws.
  net_link(const std::string& server_uri, board& orders, int slot);
  ~net_link();  // stops obeying; the proxy closes every connection
  net_link(const net_link&) = delete;
  net_link& operator=(const net_link&) = delete;

  // The URI the lock handle connects to (the proxy's).
  const std::string& uri() const { return proxy_.uri(); }

 private:
  void obey(std::stop_token stop);
  void apply(const net_order& o);

  test::tcp_proxy proxy_;
  board& orders_;
  int slot_;
  std::jthread thread_;  // last: stops first
};

}  // namespace sqllock::fault
