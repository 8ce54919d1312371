// Checks on what callers pass when they name a lock or choose its lease.
#pragma once

#include <chrono>
#include <string_view>

namespace sqllock::detail {

// Longest lock name in bytes; it fits every dialect's index (see docs/design.md).
inline constexpr std::size_t kMaxLockName = 255;
// Longest lease sqllock accepts.
inline constexpr std::chrono::milliseconds kMaxTtl = std::chrono::hours(24 * 365);

// Throws invalid_argument unless `name` is 1–255 bytes of valid UTF-8 without NUL. Names are
// compared byte for byte: no case folding, no Unicode normalisation, no trimming.
void validate_lock_name(std::string_view name);
// The same checks for another kind of name; `what` ("latch name", "participant id") leads the
// messages.
void validate_lock_name(std::string_view name, std::string_view what);

// Throws invalid_argument unless 1 ms <= ttl <= 365 days.
void validate_ttl(std::chrono::milliseconds ttl);

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view s) noexcept;

}  // namespace sqllock::detail
