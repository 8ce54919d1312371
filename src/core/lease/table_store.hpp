// Runs the dialect's lock-table statements and reads their results. The only place where the
// core touches lock-table SQL results; the SQL text itself lives in the dialect.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/lease/lease_store.hpp"
#include "dialect/dialect.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

struct acquire_request {
  std::string resource;
  std::string owner;
  std::string session;
  std::chrono::milliseconds lease;
  bool auto_renew;
};

struct acquired {
  std::int64_t count;
  std::int64_t fence;
};

// Runs one lease statement (lock rows or permits) alone in autocommit. A deadlock victim is run
// again (up to 4 times, backing off): the server rolled the statement back whole. Throws
// outcome_unknown when the connection broke after the statement may have been applied,
// backend_error (classified, core/handle/error_translation.hpp) / schema_error otherwise.
result run_lease_statement(connection& conn, dialect_kind kind, const std::string& sql, std::span<const value> params);

// The store of lock rows (table_lock, multi_lock): rows of lease_table::locks, tag 'l'.
const lease_store& lock_rows_store();

// Statements on one connection. Every function throws outcome_unknown when the connection broke
// after the statement may have been applied, backend_error / schema_error otherwise.
class table_store {
 public:
  table_store(connection& conn, const dialect_sql& sql) : conn_(conn), sql_(sql) {}

  // The acquisition, or nullopt when another owner holds a live lease.
  std::optional<acquired> acquire(const acquire_request& r);

  // Time left on the lease of `resource`, or nullopt when nobody holds it.
  std::optional<std::chrono::milliseconds> lease_remaining(const std::string& resource);

  // Releases one level: decrements when depth > 1, deletes the row when depth == 1. Returns false
  // when the row no longer belongs to (owner, fence): the lease was lost.
  bool release(const std::string& resource, const std::string& owner, std::int64_t fence, std::int64_t depth);

  // Extends every live auto-renew lease of `session`; returns the leases still held.
  std::vector<held_lease> renew(const std::string& session);

 private:
  result run(const std::string& sql, std::span<const value> params);

  connection& conn_;
  const dialect_sql& sql_;
};

}  // namespace sqllock::detail
