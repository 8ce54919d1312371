// Durations on the command line: `500ms`, `30s`, `5m`, `1h`, or a bare number of seconds
// (fractions allowed, like flock's -w: `0.5`).
#pragma once

#include <chrono>
#include <string_view>

namespace sqllock::cli {

// What parse_duration accepts, for usage texts and error messages.
inline constexpr std::string_view kDurationForms =
    "a number of seconds (10, 0.5) or a number with a unit: 500ms, 30s, 5m, 1h";

// The longest duration accepted: anything longer is a typo, and it keeps deadline arithmetic on
// std::chrono::steady_clock (nanoseconds) far from overflow.
inline constexpr std::chrono::milliseconds kMaxDuration = std::chrono::hours(24 * 366 * 100);

// Parses `text`, the value of command-line option `option` (named in error messages).
// Form: digits with an optional fraction (`1`, `1.5`, `.5`), then an optional unit `ms`, `s`,
// `m` or `h` (none: seconds). Fractions finer than a millisecond round up, so a non-zero value
// never becomes zero. Throws usage_error (cli.hpp) for an empty value, a sign, spaces, an
// unknown unit, more than 9 fraction digits, or a value over kMaxDuration.
std::chrono::milliseconds parse_duration(std::string_view text, std::string_view option);

}  // namespace sqllock::cli
