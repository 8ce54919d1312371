#include "duration.hpp"

#include <cstdint>
#include <string>

#include "cli.hpp"

namespace sqllock::cli {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

[[noreturn]] void reject(std::string_view text, std::string_view option, std::string_view why) {
  throw usage_error{"invalid duration '" + std::string(text) + "' for " + std::string(option) + ": " +
                    std::string(why) + "; use " + std::string(kDurationForms)};
}

// Milliseconds per unit, or 0 for an unknown unit.
std::uint64_t unit_ms(std::string_view unit) {
  if (unit.empty() || unit == "s") return 1000;
  if (unit == "ms") return 1;
  if (unit == "m") return 60 * 1000;
  if (unit == "h") return 60 * 60 * 1000;
  return 0;
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text, std::string_view option) {
  if (text.empty()) reject(text, option, "it is empty");
  constexpr auto max_ms = static_cast<std::uint64_t>(kMaxDuration.count());

  std::size_t i = 0;
  // Integer part, saturating just above the maximum so that long digit strings cannot wrap.
  std::uint64_t whole = 0;
  std::size_t whole_digits = 0;
  for (; i < text.size() && is_digit(text[i]); ++i, ++whole_digits)
    whole = whole > max_ms ? whole : whole * 10 + static_cast<std::uint64_t>(text[i] - '0');

  // Fraction: kept as numerator / 10^digits; 9 digits keep numerator × unit well inside 64 bits.
  std::uint64_t frac = 0, scale = 1;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const std::size_t start = i;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      if (i - start == 9) reject(text, option, "at most 9 digits after the point");
      frac = frac * 10 + static_cast<std::uint64_t>(text[i] - '0');
      scale *= 10;
    }
    if (i == start) reject(text, option, "a digit must follow the point");
  } else if (whole_digits == 0) {
    reject(text, option, text[0] == '-' ? "it must not be negative" : "it must start with a number");
  }

  const std::uint64_t per_unit = unit_ms(text.substr(i));
  if (per_unit == 0) reject(text, option, "unknown unit '" + std::string(text.substr(i)) + "'");

  const char* too_long = "it is longer than 100 years";
  if (whole > max_ms / per_unit) reject(text, option, too_long);
  const std::uint64_t ms = whole * per_unit + (frac * per_unit + scale - 1) / scale;  // round up
  if (ms > max_ms) reject(text, option, too_long);
  return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(ms));
}

}  // namespace sqllock::cli
