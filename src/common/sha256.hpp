// SHA-256 (FIPS 180-4). sqllock uses it wherever a value must be the same on every client and
// every version: migration checksums, advisory-lock keys and over-long GET_LOCK names.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sqllock::detail {

std::array<std::uint8_t, 32> sha256(std::string_view data);

// Lower-case hex of sha256(data): the same as `sha256sum` prints.
std::string sha256_hex(std::string_view data);

}  // namespace sqllock::detail
