// sqllock::reap: deletes expired lock rows in batches. The SQL (and how each dialect avoids
// waiting for locked rows) lives in dialect/admin_sql.cpp.
#include "sqllock/reaper.hpp"

#include "core/admin_store.hpp"
#include "core/database_impl.hpp"
#include "common/lock_name.hpp"
#include "sqllock/error.hpp"

namespace sqllock {

std::uint64_t reap(const database& db, const reap_options& options) {
  if (options.batch_size < 1 || options.batch_size > max_reap_batch)
    throw invalid_argument("reap batch size must be between 1 and " + std::to_string(max_reap_batch) + ", not " +
                           std::to_string(options.batch_size));
  if (options.grace < std::chrono::milliseconds::zero() || options.grace > detail::kMaxTtl)
    throw invalid_argument("reap grace must be between 0 and 365 days");

  auto& impl = detail::database_access::impl(db);
  const auto sql = detail::make_admin_sql(impl.dialect(), db.table());
  std::uint64_t total = 0;
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
    if (options.on_batch) options.on_batch(batch.deleted);
    // A short batch means the scan ran out of unlocked expired rows: the pass is done. Rows
    // skipped because another transaction held them wait for the next pass.
    if (batch.candidates < options.batch_size) break;
  }
  return total;
}

}  // namespace sqllock
