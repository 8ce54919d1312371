#include "core/identity.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <random>

namespace sqllock::detail {

const std::string& host_name() {
  static const std::string name = [] {
    std::array<char, 256> buf{};
    if (::gethostname(buf.data(), buf.size() - 1) != 0 || buf[0] == '\0') return std::string("unknown-host");
    return std::string(buf.data());
  }();
  return name;
}

std::string random_token() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string out;
  out.reserve(32);
  for (int i = 0; i < 4; ++i) {
    std::uint32_t v = rd();
    for (int j = 0; j < 8; ++j, v >>= 4) out += kHex[v & 15];
  }
  return out;
}

std::int64_t current_thread_id() noexcept { return static_cast<std::int64_t>(::syscall(SYS_gettid)); }

}  // namespace sqllock::detail
