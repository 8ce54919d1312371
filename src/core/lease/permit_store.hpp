// Runs the dialect's permit statements (dialect/permit_sql.hpp) and reads their results: the only
// place where the core touches permit SQL results, as table_store is for lock rows.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/lease/table_store.hpp"
#include "dialect/permit_sql.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

struct permit_request {
  std::string resource;
  std::int64_t permits;  // N: slots 0 … N-1
  std::string owner;     // unique per attempt
  std::string session;
  std::chrono::milliseconds lease;
  bool auto_renew;
};

struct permit_grant {
  std::int64_t slot;
  std::int64_t fence;
};

// Statements on one connection. Every function throws outcome_unknown when the connection broke
// after the statement may have been applied, backend_error / schema_error otherwise.
class permit_store {
 public:
  permit_store(connection& conn, const permit_sql& sql, std::string wakeup_channel)
      : conn_(conn), sql_(sql), channel_(std::move(wakeup_channel)) {}

  // A free slot below N, taken; nullopt when all N are held by live permits. When a concurrent
  // acquire takes the picked slot between the pick and the insert, another free slot is picked,
  // until one is taken or all N are seen busy: a lost race is never a refusal. (Bounded: more than
  // N + 4 lost picks — permits released and taken again throughout — also give nullopt.)
  std::optional<permit_grant> acquire(const permit_request& r);

  // Time until the first live permit below N runs out, or nullopt when none is live.
  std::optional<std::chrono::milliseconds> lease_remaining(const std::string& resource, std::int64_t permits);

  // Deletes the permit (owner and fence must match). False when it is not there any more.
  bool release(const std::string& resource, const std::string& owner, std::int64_t fence);

 private:
  result run(const std::string& sql, std::span<const value> params);

  connection& conn_;
  const permit_sql& sql_;
  const std::string channel_;
};

// The store of semaphore permits: rows of lease_table::permits, tag 'p'.
const lease_store& permit_rows_store();

}  // namespace sqllock::detail
