#include "fault/net_link.hpp"

#include <unistd.h>

#include <chrono>

#include "fault/history.hpp"

namespace sqllock::fault {

net_link::net_link(const std::string& server_uri, board& orders, int slot)
    : proxy_(server_uri), orders_(orders), slot_(slot), thread_([this](std::stop_token stop) { obey(stop); }) {}

net_link::~net_link() = default;

// Polls the slot every millisecond: an order for this process takes effect and is acknowledged
// with the time it did, which the nemesis logs as the fault's start or end. A degraded network
// heals by itself at the order's heal_at, so that no freeze outlives a nemesis that failed to
// lift it.
void net_link::obey(std::stop_token stop) {
  // An order posted before this process started was for its predecessor in the slot.
  std::int64_t seen = orders_.order_after(slot_, -2).value_or(std::pair{0, net_order{}}).first;
  net_order current;
  while (!stop.stop_requested()) {
    if (const auto next = orders_.order_after(slot_, seen)) {
      seen = next->first;
      if (next->second.pid == ::getpid()) {
        current = next->second;
        apply(current);
        orders_.acknowledge(slot_, seen, mono_ns());
      }
    }
    if (current.degraded() && current.heal_at && mono_ns() >= current.heal_at) {
      current = net_order{};
      apply(current);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void net_link::apply(const net_order& o) {
  proxy_.set_delay(std::chrono::milliseconds(o.delay_ms), std::chrono::milliseconds(o.delay_ms));
  proxy_.set_stalls(o.stall_permille / 1000.0, std::chrono::milliseconds(o.stall_ms));
  if (o.freeze)
    proxy_.partition();
  else
    proxy_.thaw();
}

}  // namespace sqllock::fault
