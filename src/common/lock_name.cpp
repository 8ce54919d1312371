#include "common/lock_name.hpp"

#include <string>

#include "sqllock/error.hpp"

namespace sqllock::detail {

bool is_valid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len;
    char32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

void validate_lock_name(std::string_view name) { validate_lock_name(name, "lock name"); }

void validate_lock_name(std::string_view name, std::string_view what) {
  const std::string w(what);
  if (name.empty()) throw invalid_argument(w + " is empty; give it a non-empty name");
  if (name.size() > kMaxLockName) {
    throw invalid_argument(w + " is " + std::to_string(name.size()) + " bytes; the limit is " +
                           std::to_string(kMaxLockName) +
                           " bytes (names are never truncated: shorten it, "
                           "or hash long names yourself)");
  }
  if (name.find('\0') != std::string_view::npos) throw invalid_argument(w + " contains a NUL byte");
  if (!is_valid_utf8(name)) throw invalid_argument(w + " is not valid UTF-8");
}

void validate_ttl(std::chrono::milliseconds ttl) {
  if (ttl < std::chrono::milliseconds(1))
    throw invalid_argument("lock ttl must be at least 1 ms (got " + std::to_string(ttl.count()) + " ms)");
  if (ttl > kMaxTtl)
    throw invalid_argument("lock ttl must be at most 365 days (got " + std::to_string(ttl.count()) + " ms)");
}

}  // namespace sqllock::detail
