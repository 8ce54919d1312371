// The reaper's log: one logfmt line per event (key=value pairs, values quoted when needed),
// info on stdout and errors on stderr, each line written and flushed whole so that lines from
// the signal thread and the pass loop never interleave. journald and cron add nothing to parse.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sqllock::reaper {

enum class level { info, error };

using log_field = std::pair<std::string_view, std::string>;

// Writes "time=<UTC ISO 8601> level=<level> event=<event> k=v …". Thread-safe; never throws.
void log_event(level lvl, std::string_view event, const std::vector<log_field>& fields) noexcept;

// A duration in milliseconds with microsecond precision, e.g. "3.412".
std::string millis_text(std::chrono::nanoseconds d);

}  // namespace sqllock::reaper
