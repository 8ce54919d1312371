// The reaper's part for latches (sqllock::reap, core/admin/reaper.cpp): deleting latches that opened
// long enough ago, and latches whose ttl ran out, with their arrivals; then arrivals of earlier
// generations of latches that were armed again.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>

namespace sqllock::detail {

class database_impl;

struct latch_reap_request {
  std::size_t batch_size = 1000;
  std::chrono::milliseconds retention{0};  // open latches: opened at least this long ago
  std::chrono::milliseconds grace{0};      // armed latches: ttl ran out at least this long ago
  std::stop_token stop{};
  // Called after each committed batch that deleted latches, with how many (may be empty).
  std::function<void(std::uint64_t)> on_batch{};
};

// Deletes the latches of `table` that r selects, in batches until one comes back short (latches a
// count-down holds are skipped until the next pass), then the arrivals no latch generation has
// any more. Returns the number of latches deleted. Throws schema_error when the latch tables are
// missing, connection_error / backend_error (latches deleted by earlier batches stay deleted).
std::uint64_t reap_latches(database_impl& impl, const std::string& table, const latch_reap_request& r);

}  // namespace sqllock::detail
