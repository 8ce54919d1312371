// sqllock::reap: deletes expired lock rows, semaphore permits and wait-queue entries in batches, then
// latches. The SQL (and how each dialect avoids waiting for locked rows) lives in dialect/admin_sql.cpp.
#include "sqllock/reaper.hpp"

#include "core/admin/admin_store.hpp"
#include "core/handle/database_impl.hpp"
#include "core/admin/latch_reap.hpp"
#include "common/lock_name.hpp"
#include "sqllock/error.hpp"

namespace sqllock {

std::uint64_t reap(const database& db, const reap_options& options) {
  if (options.batch_size < 1 || options.batch_size > max_reap_batch)
    throw invalid_argument("reap batch size must be between 1 and " + std::to_string(max_reap_batch) + ", not " +
                           std::to_string(options.batch_size));
  if (options.grace < std::chrono::milliseconds::zero() || options.grace > detail::kMaxTtl)
    throw invalid_argument("reap grace must be between 0 and 365 days");
  if (options.latch_retention < std::chrono::milliseconds::zero() || options.latch_retention > detail::kMaxTtl)
    throw invalid_argument("reap latch retention must be between 0 and 365 days");

  auto& impl = detail::database_access::impl(db);
  std::uint64_t total = 0;
  // Lock rows, then semaphore permits, then wait-queue entries: the same rules on every lease
  // table. A queue's waiters delete expired entries ahead of them themselves; the reaper is the
  // backstop for names nobody waits for any more.
  for (const auto which : detail::kLeaseTables) {
    const auto sql = detail::make_admin_sql(impl.dialect(), db.table(), which);
    std::string resume;  // where the last batch's scan ended
    while (!options.stop.stop_requested()) {
      detail::reap_batch_result batch;
      {
        // One connection per batch: between batches it goes back to the pool, and a connection
        // that broke is replaced before the next one.
        auto conn = impl.borrow();
        batch = detail::admin_store(*conn, *sql).reap_batch(options.batch_size, options.grace, resume);
      }
      total += batch.deleted;
      // The permits' and the queue's empty batches stay silent: a pass reports one 0 at most.
      if (options.on_batch && (batch.deleted > 0 || which == detail::lease_table::locks))
        options.on_batch(batch.deleted);
      // A short batch means the scan ran out of unlocked expired rows: the pass is done. Rows
      // skipped because another transaction held them wait for the next pass.
      if (batch.candidates < options.batch_size) break;
    }
  }
  // Count-down latches (core/admin/latch_reap.hpp): open ones after their retention, expired ones.
  total += detail::reap_latches(
      impl, db.table(), {options.batch_size, options.latch_retention, options.grace, options.stop, options.on_batch});
  return total;
}

}  // namespace sqllock
