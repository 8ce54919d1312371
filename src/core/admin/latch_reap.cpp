#include "core/admin/latch_reap.hpp"

#include "core/handle/database_impl.hpp"
#include "core/kinds/latch_store.hpp"

namespace sqllock::detail {

std::uint64_t reap_latches(database_impl& impl, const std::string& table, const latch_reap_request& r) {
  const auto sql = latch_statements(impl.dialect(), table);
  std::uint64_t total = 0;
  while (!r.stop.stop_requested()) {
    latch_reap_batch batch;
    {
      // One connection per batch, as for lock rows: it goes back to the pool in between.
      auto conn = impl.borrow();
      batch = latch_store(*conn, *sql).reap_batch(r.batch_size, r.retention, r.grace);
    }
    total += batch.deleted;
    if (batch.deleted > 0 && r.on_batch) r.on_batch(batch.deleted);
    if (batch.candidates < r.batch_size) break;
  }
  // Arrivals of generations that were re-armed since: nothing reads them any more.
  while (!r.stop.stop_requested()) {
    auto conn = impl.borrow();
    if (latch_store(*conn, *sql).sweep_arrivals(r.batch_size) < r.batch_size) break;
  }
  return total;
}

}  // namespace sqllock::detail
