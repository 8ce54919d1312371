// Runs the latch statements (dialect/latch_sql.hpp) on one connection and reads their results:
// the only place where the core touches latch SQL results. What the results mean for the caller
// (absent, open, counted) is decided in latch.cpp; the SQL text lives in the dialect.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dialect/latch_sql.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

// A latch row as `find` read it.
struct latch_row {
  std::int64_t count = 0;
  std::int64_t initial = 0;
  std::int64_t generation = 0;
  std::string instance;  // created_at as exact text: the same only for the same latch
  std::string armed_at;
  std::optional<std::string> opened_at;
  std::optional<std::chrono::milliseconds> expires_in;
  bool expired = false;  // armed, and its ttl ran out: absent to every operation

  bool open() const noexcept { return count == 0; }
};

// What a count-down statement found and did.
struct count_down_outcome {
  bool found = false;           // a latch row exists (it may still be expired or open)
  bool counted = false;         // this call lowered the count
  bool armed = false;           // the latch was armed (count > 0, ttl not run out) when the call looked
  std::int64_t generation = 0;  // known for participant count-downs only
  std::int64_t remaining = 0;   // the count after the call, when found
};

struct latch_reap_batch {
  std::uint64_t candidates = 0;  // latches the batch took (locked) to delete
  std::uint64_t deleted = 0;     // of those, deleted (one re-armed meanwhile stays)
};

// Statements on one connection. Statements that change state throw outcome_unknown when the
// connection broke after they were sent (a participant count-down's transaction: only during its
// COMMIT — before, the server rolls it back); reads throw connection_error. A deadlock victim is
// run again (the whole transaction for a participant count-down), up to 4 times. Everything
// throws schema_error when the latch tables are missing and backend_error otherwise.
class latch_store {
 public:
  // `channel`: the wake-up channel count-downs notify (PostgreSQL; empty elsewhere).
  latch_store(connection& conn, const latch_sql& sql, std::string channel = {})
      : conn_(conn), sql_(sql), channel_(std::move(channel)) {}

  // Arms the latch; the generation armed, or nullopt when an armed latch exists.
  std::optional<std::int64_t> arm(const std::string& resource, std::int64_t count,
                                  std::optional<std::chrono::milliseconds> ttl);

  // One anonymous count-down. When nothing was counted, only `found == false` is known: ask find().
  count_down_outcome count_down(const std::string& resource);

  // One count-down of `participant` in the current generation.
  count_down_outcome count_down(const std::string& resource, const std::string& participant);

  // Whether `participant` arrived in `generation` of the latch.
  bool arrived(const std::string& resource, std::int64_t generation, const std::string& participant);

  std::optional<latch_row> find(const std::string& resource);
  std::vector<std::string> arrivals(const std::string& resource, std::int64_t generation);

  // Deletes at most `batch` latches opened `retention` ago or armed past their ttl by `grace`,
  // with their arrivals, skipping latches other transactions hold.
  latch_reap_batch reap_batch(std::size_t batch, std::chrono::milliseconds retention, std::chrono::milliseconds grace);
  // Deletes at most `batch` arrivals of generations no latch has any more; returns how many.
  std::uint64_t sweep_arrivals(std::size_t batch);

 private:
  result write(const std::string& sql, std::span<const value> params);
  result read(const std::string& sql, std::span<const value> params);
  count_down_outcome count_down_in_transaction(const std::string& resource, const std::string& participant);

  connection& conn_;
  const latch_sql& sql_;
  const std::string channel_;
};

}  // namespace sqllock::detail
