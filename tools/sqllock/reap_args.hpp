// The reaper's command-line options (--batch, --grace), shared by `sqllock reap` and
// sqllock-reaper so both accept and describe them identically.
#pragma once

#include <string_view>

#include "cli.hpp"
#include "sqllock/reaper.hpp"

namespace sqllock::cli {

// Usage text for the two options (descriptions start at column 22, as in both programs' usage).
inline constexpr std::string_view kReapOptionsUsage =
    "  --batch N            rows deleted per statement, 1–100000 (default: 1000)\n"
    "  --grace D            only delete rows whose lease ended at least D ago (default: 0s)\n";

// Takes --batch and --grace from `a`. Throws usage_error for a malformed or out-of-range value.
reap_options take_reap_options(args& a);

}  // namespace sqllock::cli
