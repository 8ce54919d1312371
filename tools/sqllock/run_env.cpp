#include "run_env.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace sqllock::cli {

namespace {

constexpr std::array<std::string_view, 7> kExact = {"SQLLOCK_KIND",      "SQLLOCK_NAME", "SQLLOCK_FENCE",
                                                    "SQLLOCK_LEASE_MS",  "SQLLOCK_SLOT", "SQLLOCK_MODE",
                                                    "SQLLOCK_NAME_COUNT"};
constexpr std::array<std::string_view, 2> kIndexed = {"SQLLOCK_NAME_", "SQLLOCK_FENCE_"};

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

bool is_run_variable(const std::string& entry) {
  const std::string_view name = std::string_view(entry).substr(0, entry.find('='));
  if (std::find(kExact.begin(), kExact.end(), name) != kExact.end()) return true;
  return std::any_of(kIndexed.begin(), kIndexed.end(), [&](std::string_view prefix) {
    return name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix &&
           all_digits(name.substr(prefix.size()));
  });
}

std::vector<std::string> command_environment(const char* const* inherited, const run_env_values& v) {
  std::vector<std::string> env;
  for (const char* const* e = inherited; e && *e; ++e)
    if (std::string entry(*e); !is_run_variable(entry)) env.push_back(std::move(entry));
  auto set = [&](std::string_view name, const std::string& value) { env.push_back(std::string(name) + "=" + value); };
  set("SQLLOCK_KIND", v.kind);
  if (!v.names.empty()) set("SQLLOCK_NAME", v.names.front());
  if (!v.fences.empty()) set("SQLLOCK_FENCE", std::to_string(v.fences.front()));
  if (v.lease) set("SQLLOCK_LEASE_MS", std::to_string(v.lease->count()));
  if (v.slot) set("SQLLOCK_SLOT", std::to_string(*v.slot));
  if (v.mode) set("SQLLOCK_MODE", *v.mode);
  if (v.names.size() > 1) {
    set("SQLLOCK_NAME_COUNT", std::to_string(v.names.size()));
    for (std::size_t i = 0; i < v.names.size(); ++i) {
      const std::string n = std::to_string(i + 1);
      set("SQLLOCK_NAME_" + n, v.names[i]);
      if (i < v.fences.size()) set("SQLLOCK_FENCE_" + n, std::to_string(v.fences[i]));
    }
  }
  return env;
}

}  // namespace sqllock::cli
