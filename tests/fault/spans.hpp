// Intervals of CLOCK_MONOTONIC time, [first, second) in ns, and their union and difference: when a
// name was busy or awaited (fault/queue_check.cpp), how much of a wait a stall covered
// (fault/checker.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace sqllock::fault {

using span = std::pair<std::int64_t, std::int64_t>;

// The union of `spans`, sorted and merged (empty spans dropped).
inline std::vector<span> merged(std::vector<span> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<span> out;
  for (const auto& s : spans) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second)
      out.back().second = std::max(out.back().second, s.second);
    else
      out.push_back(s);
  }
  return out;
}

// `a` less `b` (both merged).
inline std::vector<span> minus(const std::vector<span>& a, const std::vector<span>& b) {
  std::vector<span> out;
  std::size_t j = 0;
  for (auto [from, to] : a) {
    while (j < b.size() && b[j].second <= from) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < to; ++k) {
      if (b[k].first > from) out.emplace_back(from, b[k].first);
      from = std::max(from, b[k].second);
    }
    if (from < to) out.emplace_back(from, to);
  }
  return out;
}

// The total length of `spans` (merged: disjoint).
inline std::int64_t length(const std::vector<span>& spans) {
  std::int64_t total = 0;
  for (const auto& [from, to] : spans) total += to - from;
  return total;
}

}  // namespace sqllock::fault
