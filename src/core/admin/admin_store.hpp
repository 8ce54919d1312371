// Runs the operator statements (dialect/admin_sql.hpp) on one connection and reads their
// results: the reaper's batches, the status listings and the forced release. The SQL itself
// lives in the dialect; the public functions (reaper.cpp, status.cpp) borrow the connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dialect/admin_sql.hpp"
#include "driver/connection.hpp"
#include "sqllock/status.hpp"

namespace sqllock::detail {

struct reap_batch_result {
  std::uint64_t candidates = 0;  // expired rows this batch took (locked) to delete
  std::uint64_t deleted = 0;     // of those, rows deleted (a concurrent renewal may save some)
};

// Statements on one connection. Every function throws schema_error when the lock table is
// missing, connection_error / backend_error otherwise; transactions it opens are rolled back on
// failure.
class admin_store {
 public:
  admin_store(connection& conn, const admin_sql& sql) : conn_(conn), sql_(sql) {}

  // Deletes at most `batch` rows whose lease ended `grace` ago, skipping locked rows. `resume`
  // carries where the pass's scan got to from one batch to the next (start a pass with it empty).
  reap_batch_result reap_batch(std::size_t batch, std::chrono::milliseconds grace, std::string& resume);

  std::vector<lock_info> list_locks();
  std::optional<lock_info> find_lock(const std::string& resource);
  std::vector<advisory_lock_info> advisory_locks();

  // Deletes the row of `resource` and returns it. `wakeup_channel` (may be empty) is the
  // PostgreSQL channel that waiters listen on. Throws outcome_unknown when the connection broke
  // after the delete may have been applied.
  std::optional<lock_info> force_release(const std::string& resource, const std::string& wakeup_channel);

  // With the statements of the permits table (lease_table::permits): its rows, all slots of one
  // resource, and the forced release of all slots of one resource.
  std::vector<permit_info> list_permits();
  std::vector<permit_info> find_permits(const std::string& resource);
  std::vector<permit_info> force_release_permits(const std::string& resource, const std::string& wakeup_channel);

  // With the statements of the wait queue (lease_table::queue): its entries in queue order, with
  // their positions and whether they hold; those of one resource (and kind, when given); and the
  // forced release of those.
  std::vector<queue_entry_info> list_queue();
  std::vector<queue_entry_info> find_queue(const std::string& resource, std::optional<queue_lock_kind> kind);
  std::vector<queue_entry_info> force_release_queue(const std::string& resource, const std::string& wakeup_channel,
                                                    std::optional<queue_lock_kind> kind);

 private:
  // The rows of `resource` (narrowed by the scope values, admin_sql::scope_params).
  std::vector<row> find_rows(const std::string& resource, std::span<const value> scope);
  // Deletes the rows of `resource` (narrowed by the scope values) and returns them as they were.
  std::vector<row> force_release_rows(const std::string& resource, const std::string& wakeup_channel,
                                      std::span<const value> scope = {});
  result run(const std::string& sql, std::span<const value> params);
  result run_direct(const std::string& sql);

  connection& conn_;
  const admin_sql& sql_;
};

}  // namespace sqllock::detail
