#include "core/kinds/multi_lock_names.hpp"

#include <algorithm>

#include "common/lock_name.hpp"
#include "sqllock/error.hpp"
#include "sqllock/multi_lock.hpp"

namespace sqllock::detail {

std::vector<std::string> checked_names(std::vector<std::string> names, std::chrono::milliseconds ttl) {
  if (names.empty()) throw invalid_argument("multi_lock needs at least one lock name; the list is empty");
  if (names.size() > multi_lock::max_names)
    throw invalid_argument("multi_lock takes at most " + std::to_string(multi_lock::max_names) + " lock names (got " +
                           std::to_string(names.size()) + "); split the set, or lock a name that stands for it");
  for (std::size_t i = 0; i < names.size(); ++i) {
    try {
      validate_lock_name(names[i]);
    } catch (const invalid_argument& e) {
      throw invalid_argument("multi_lock name " + std::to_string(i + 1) + " of " + std::to_string(names.size()) + ": " +
                             e.what());
    }
  }
  validate_ttl(ttl);
  std::sort(names.begin(), names.end());
  if (const auto twice = std::adjacent_find(names.begin(), names.end()); twice != names.end())
    throw invalid_argument("multi_lock lock name '" + *twice + "' is given twice; give each name once");
  return names;
}

std::string describe_names(const std::vector<std::string>& names) {
  std::string out = "multi_lock of ";
  const std::size_t shown = std::min<std::size_t>(names.size(), 3);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i > 0) out += (i + 1 == names.size()) ? " and " : ", ";
    out.append("'").append(names[i]).append("'");
  }
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

}  // namespace sqllock::detail
