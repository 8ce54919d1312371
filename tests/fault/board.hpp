// A small shared-memory board through which worker processes tell the nemesis how many locks
// each of them holds right now, so that crashes and pauses hit holders (Jepsen's "while it holds
// a lock"), whatever the lock kind and database.
#pragma once

#include <atomic>
#include <filesystem>

namespace sqllock::fault {

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

 private:
  void* mem_ = nullptr;
};

}  // namespace sqllock::fault
