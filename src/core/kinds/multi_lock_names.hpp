// A multi_lock's set of lock names: checked before anything is sent, and spelled in messages.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace sqllock::detail {

// The names sorted by bytes (the order the databases compare them in: COLLATE "C", VARBINARY,
// BINARY), after checking each, their count and duplicates, and the ttl; throws invalid_argument
// saying which name is wrong and why.
std::vector<std::string> checked_names(std::vector<std::string> names, std::chrono::milliseconds ttl);

// "multi_lock of 'a', 'b' and 'c'", at most three names spelled out.
std::string describe_names(const std::vector<std::string>& names);

}  // namespace sqllock::detail
