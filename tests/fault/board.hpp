// A small shared-memory board through which worker processes tell the nemesis how many locks
// each of them holds right now, so that crashes and pauses hit holders (Jepsen's "while it holds
// a lock"), whatever the lock kind and database; and through which the nemesis orders a worker
// to degrade its own lock connections (fault/net_link.hpp), and the worker says when it did.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <utility>

#include <sys/types.h>

namespace sqllock::fault {

// What a worker's lock connections should suffer (all zero: nothing, the network is whole).
struct net_order {
  pid_t pid = 0;             // the worker process it is for; others in the slot ignore it
  bool freeze = false;       // a silent partition: no byte either way (tcp_proxy::partition)
  int delay_ms = 0;          // a steady delay each way
  int stall_permille = 0;    // retransmission-like stalls: this chance per chunk …
  int stall_ms = 0;          // … of this long a hold-up
  std::int64_t heal_at = 0;  // CLOCK_MONOTONIC: the worker heals by itself then, whatever comes
  bool degraded() const { return freeze || delay_ms > 0 || stall_permille > 0; }
};

class board {
 public:
  static constexpr int kSlots = 64;
  // Maps `path`, creating it (zeroed) when `create`. Throws std::runtime_error on failure.
  board(const std::filesystem::path& path, bool create);
  ~board();
  board(const board&) = delete;
  board& operator=(const board&) = delete;

  // The number of locks the worker in `slot` holds (0 ≤ slot < kSlots).
  std::atomic<int>& held(int slot);
  // The worker: a section of its will last until `until` (CLOCK_MONOTONIC). The nemesis:
  // the latest end of a section it was told of (the past once they are over).
  void section_until(int slot, std::int64_t until);
  std::int64_t section_until(int slot);

  // The nemesis: posts `o` for the worker in `slot`; returns the order's number, for applied().
  std::int64_t post(int slot, const net_order& o);
  // When the worker in `slot` applied order `number` (CLOCK_MONOTONIC), or nullopt if not yet.
  std::optional<std::int64_t> applied(int slot, std::int64_t number);

  // The worker: the latest order in `slot` when it is newer than `seen` (its number and content).
  std::optional<std::pair<std::int64_t, net_order>> order_after(int slot, std::int64_t seen);
  // The worker: order `number` took effect at `at`.
  void acknowledge(int slot, std::int64_t number, std::int64_t at);

 private:
  struct slot_state;
  slot_state& at(int slot);
  void* mem_ = nullptr;
};

}  // namespace sqllock::fault
