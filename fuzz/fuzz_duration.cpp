// libFuzzer target: sqllock::cli::parse_duration (tools/sqllock/duration.cpp), the parser of
// --ttl, --wait, --grace and --interval, on arbitrary bytes.
//
// Besides crashes and sanitizer reports, it compares every input with an independent model of the
// documented grammar — digits with an optional fraction of at most 9 digits, then an optional unit
// ms/s/m/h; the value in milliseconds rounded up; at most kMaxDuration — computed exactly in
// 128-bit arithmetic: the parser must accept exactly what the model accepts, with the same value,
// and refuse everything else with usage_error.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "cli.hpp"
#include "duration.hpp"

namespace {

using u128 = unsigned __int128;

[[noreturn]] void fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "fuzz_duration: %s; input (%zu bytes): '%.*s'\n", what, input.size(),
               static_cast<int>(input.size()), input.data());
  std::abort();
}

bool digit(char c) { return c >= '0' && c <= '9'; }

// The model: the value in milliseconds, or nullopt when the grammar or the range refuses it.
std::optional<std::uint64_t> model(std::string_view s) {
  std::size_t i = 0;
  // Leading zeros do not count towards the size of the number; 40 significant digits already
  // exceed any limit, so the exact value stays within 128 bits.
  u128 whole = 0;
  bool huge = false, any = false;
  for (; i < s.size() && digit(s[i]); ++i) {
    any = true;
    if (whole > (u128(1) << 100))
      huge = true;
    else
      whole = whole * 10 + static_cast<unsigned>(s[i] - '0');
  }
  u128 frac = 0, scale = 1;
  if (i < s.size() && s[i] == '.') {
    const std::size_t start = ++i;
    for (; i < s.size() && digit(s[i]); ++i) {
      frac = frac * 10 + static_cast<unsigned>(s[i] - '0');
      scale *= 10;
      if (i - start >= 9) return std::nullopt;  // a 10th fraction digit
    }
    if (i == start) return std::nullopt;
    any = true;
  }
  if (!any) return std::nullopt;
  const std::string_view unit = s.substr(i);
  u128 per_unit;
  if (unit.empty() || unit == "s")
    per_unit = 1000;
  else if (unit == "ms")
    per_unit = 1;
  else if (unit == "m")
    per_unit = 60000;
  else if (unit == "h")
    per_unit = 3600000;
  else
    return std::nullopt;
  if (huge) return std::nullopt;
  const u128 ms = whole * per_unit + (frac * per_unit + scale - 1) / scale;
  if (ms > static_cast<u128>(sqllock::cli::kMaxDuration.count())) return std::nullopt;
  return static_cast<std::uint64_t>(ms);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto expected = model(text);
  try {
    const auto got = sqllock::cli::parse_duration(text, "--wait");
    if (!expected) fail("accepted what the grammar refuses", text);
    if (got.count() < 0 || static_cast<std::uint64_t>(got.count()) != *expected) fail("wrong value", text);
  } catch (const sqllock::cli::usage_error& e) {
    if (expected) fail("refused a valid duration", text);
    if (e.message.rfind("invalid duration '", 0) != 0 || e.message.find("for --wait") == std::string::npos)
      fail("message does not name the value and the option", text);
  }
  return 0;
}
