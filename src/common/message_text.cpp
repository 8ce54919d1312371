#include "common/message_text.hpp"

#include "common/lock_name.hpp"

namespace sqllock::detail {
namespace {

// Length of the UTF-8 sequence that lead byte `c` announces (1 for ASCII, 0 for a byte that
// cannot start one).
std::size_t sequence_length(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) return 2;
  if ((c & 0xF0) == 0xE0) return 3;
  if ((c & 0xF8) == 0xF0) return 4;
  return 0;
}

}  // namespace

std::string message_text(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = sequence_length(c);
    // C1 controls (U+0080–U+009F, e.g. U+009B CSI) are valid UTF-8 but move terminals too.
    const bool c1_control = n == 2 && c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xA0;
    if (n > 1 && !c1_control && i + n <= s.size() && is_valid_utf8(s.substr(i, n))) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0x0F];
    }
    ++i;
  }
  return out;
}

}  // namespace sqllock::detail
