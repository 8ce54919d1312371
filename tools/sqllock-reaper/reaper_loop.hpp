// The reaper's passes: one (--once) or one every interval until stopped (--interval), with a log
// line per pass, metrics after each pass, and reconnection with capped backoff while the
// database is unreachable.
#pragma once

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>

#include "sqllock/database.hpp"
#include "sqllock/reaper.hpp"

namespace sqllock::reaper {

struct config {
  std::string uri;
  database_options db_options;
  reap_options reap;
  // Time between the starts of passes; nullopt for a single pass.
  std::optional<std::chrono::milliseconds> interval;
  std::optional<std::string> metrics_file;
};

// Runs the passes until done (single pass) or `stop`. Returns the exit status: 0 after a
// successful single pass or a requested stop; for a failed single pass the CLI's codes (3
// unreachable, 4 schema, 6 database error); 2 for a URI or option the library rejects (also in
// daemon mode: retrying cannot fix it). In daemon mode database failures are logged and retried
// after 1 s, doubling up to min(interval, 60 s).
int run(const config& cfg, std::stop_token stop);

}  // namespace sqllock::reaper
