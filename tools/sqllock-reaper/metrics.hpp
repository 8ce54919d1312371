// The reaper's counters in the Prometheus text exposition format, written atomically to a file
// (e.g. for node_exporter's textfile collector): a scraper sees the old file or the new one,
// never half of one.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace sqllock::reaper {

struct metrics {
  std::uint64_t passes = 0;       // passes run, successful or not
  std::uint64_t rows_reaped = 0;  // rows deleted by all passes
  std::uint64_t errors = 0;       // passes that failed
  std::chrono::nanoseconds last_pass_duration{0};
  // Wall-clock end of the latest successful pass; the epoch (0) before the first.
  std::chrono::system_clock::time_point last_success{};

  // The exposition text; every sample is labelled table="<table>" (table names are
  // [A-Za-z0-9_], so no escaping is needed).
  std::string to_prometheus(std::string_view table) const;
};

// Writes `text` to `path` through a temporary file in the same directory and rename(2).
// Throws std::system_error naming the path when the file cannot be written.
void write_file_atomically(const std::string& path, std::string_view text);

}  // namespace sqllock::reaper
