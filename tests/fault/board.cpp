#include "fault/board.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <stdexcept>

namespace sqllock::fault {

// One slot of the board: a worker's hold count and its network order. The file starts zeroed,
// which is a valid state of every member (lock-free atomics of 0, no other state). An order is
// written field by field and published by `number`, written last; a reader that sees `number`
// change while it reads the fields reads again.
struct board::slot_state {
  std::atomic<int> held;
  std::atomic<std::int32_t> pid, freeze, delay_ms, stall_permille, stall_ms;
  std::atomic<std::int64_t> number, heal_at, applied_number, applied_at;
  std::atomic<std::int64_t> section_until;
};

namespace {
constexpr std::size_t kStride = 64;  // one cache line per slot
constexpr std::size_t kSize = board::kSlots * kStride;
static_assert(std::atomic<std::int64_t>::is_always_lock_free, "the board needs lock-free atomics across processes");
}  // namespace

board::board(const std::filesystem::path& path, bool create) {
  static_assert(sizeof(slot_state) <= kStride, "a slot must fit its cache line");
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

board::slot_state& board::at(int slot) {
  return *reinterpret_cast<slot_state*>(static_cast<char*>(mem_) + static_cast<std::size_t>(slot) * kStride);
}

std::atomic<int>& board::held(int slot) { return at(slot).held; }

void board::section_until(int slot, std::int64_t until) {
  auto& latest = at(slot).section_until;
  for (std::int64_t seen = latest.load(); seen < until && !latest.compare_exchange_weak(seen, until);) {
  }
}

std::int64_t board::section_until(int slot) { return at(slot).section_until.load(); }

std::int64_t board::post(int slot, const net_order& o) {
  auto& s = at(slot);
  const std::int64_t number = s.number.load() + 1;
  s.number.store(-1);  // being written
  s.pid.store(o.pid);
  s.freeze.store(o.freeze ? 1 : 0);
  s.delay_ms.store(o.delay_ms);
  s.stall_permille.store(o.stall_permille);
  s.stall_ms.store(o.stall_ms);
  s.heal_at.store(o.heal_at);
  s.number.store(number);
  return number;
}

std::optional<std::int64_t> board::applied(int slot, std::int64_t number) {
  auto& s = at(slot);
  if (s.applied_number.load() != number) return std::nullopt;
  const std::int64_t at_ns = s.applied_at.load();  // written before applied_number
  if (s.applied_number.load() != number) return std::nullopt;
  return at_ns;
}

std::optional<std::pair<std::int64_t, net_order>> board::order_after(int slot, std::int64_t seen) {
  auto& s = at(slot);
  for (;;) {
    const std::int64_t number = s.number.load();
    if (number == seen) return std::nullopt;
    if (number < 0) continue;  // being written
    net_order o;
    o.pid = s.pid.load();
    o.freeze = s.freeze.load() != 0;
    o.delay_ms = s.delay_ms.load();
    o.stall_permille = s.stall_permille.load();
    o.stall_ms = s.stall_ms.load();
    o.heal_at = s.heal_at.load();
    if (s.number.load() == number) return std::pair{number, o};
  }
}

void board::acknowledge(int slot, std::int64_t number, std::int64_t at_ns) {
  auto& s = at(slot);
  s.applied_at.store(at_ns);
  s.applied_number.store(number);
}

}  // namespace sqllock::fault
