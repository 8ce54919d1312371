// The log lines of the tools (sqllock-reaper): "key=value" words, one event a line.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace sqllock::test {

// Lines of `log` for which every "key=value" in `want` is present.
inline int count_events(const std::string& log, const std::vector<std::string>& want) {
  int n = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const auto& w : want) all = all && (" " + line + " ").find(" " + w + " ") != std::string::npos;
    n += all;
  }
  return n;
}

}  // namespace sqllock::test
