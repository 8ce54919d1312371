#include "fault/board.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <stdexcept>

namespace sqllock::fault {
namespace {
constexpr std::size_t kStride = 64;  // one cache line per slot
constexpr std::size_t kSize = board::kSlots * kStride;
static_assert(std::atomic<int>::is_always_lock_free, "the board needs lock-free atomics across processes");
}  // namespace

board::board(const std::filesystem::path& path, bool create) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0644);
  if (fd < 0) throw std::runtime_error("cannot open board " + path.string());
  if (create && ::ftruncate(fd, kSize) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot size board " + path.string());
  }
  mem_ = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mem_ == MAP_FAILED) throw std::runtime_error("cannot map board " + path.string());
}

board::~board() { ::munmap(mem_, kSize); }

std::atomic<int>& board::held(int slot) {
  // The file starts zeroed, which is a valid std::atomic<int> of 0 (lock-free, no other state).
  return *reinterpret_cast<std::atomic<int>*>(static_cast<char*>(mem_) + static_cast<std::size_t>(slot) * kStride);
}

}  // namespace sqllock::fault
