#include "fault/locker.hpp"

#include <stdexcept>

#include "fault/queue_holder.hpp"
#include "fault/queue_rogue.hpp"
#include "fault/rogue_locker.hpp"
#include "fault/schema.hpp"
#include "fault/semaphore_holder.hpp"
#include "fault/told_late.hpp"

namespace sqllock::fault {
namespace {

// The shared adapter's kind for `k`.
test::lock_kind adapter_kind(lock_kind k) {
  switch (k) {
    case lock_kind::table: return test::lock_kind_named("table_lock");
    case lock_kind::advisory: return test::lock_kind_named("advisory_lock");
    case lock_kind::named: return test::lock_kind_named("named_lock");
    case lock_kind::row: return test::lock_kind_named("row_lock");
    case lock_kind::semaphore: break;  // fault/semaphore_holder.hpp
    case lock_kind::latch: break;      // no lock: fault/latch_worker.hpp
    case lock_kind::multi: break;      // no single lock: fault/multi_worker.hpp
    case lock_kind::fair:              // fault/queue_holder.hpp
    case lock_kind::rw: break;
  }
  throw std::invalid_argument("unknown lock kind");
}

// One holder of `kind` per resource for worker thread `thread_index`; unlock errors are left to
// the release outcomes.
std::vector<std::unique_ptr<test::lock_holder>> holders(const run_config& cfg, const database& db, lock_kind kind,
                                                        int thread_index) {
  if (kind == lock_kind::semaphore) return semaphore_holders(cfg, db);
  if (queued(kind)) return queue_holders(cfg, db, thread_index);
  const test::lock_kind k = adapter_kind(kind);
  test::lock_settings s;
  s.keepalive = cfg.keepalive;
  s.ttl = cfg.lease;
  s.on_unlock_error = [](const std::exception&) {};
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (int i = 0; i < cfg.resources; ++i) out.push_back(test::make_holder(k, db, resource_name(i), s));
  return out;
}

}  // namespace

std::unique_ptr<locker> make_locker(const run_config& cfg, const database& db, int thread_index,
                                    const section_plan& plan) {
  switch (cfg.ctl) {
    case control::unsafe_release:
      return std::make_unique<locker>(unsafe_release_holders(db, holders(cfg, db, lock_kind::table, thread_index)));
    case control::client_clock:
      // One rogue thread per process among sqllock's own lockers.
      if (thread_index == 0) return std::make_unique<locker>(client_clock_holders(cfg, db));
      break;
    case control::count_then_insert:
      // One counting thread per process among sqllock's own semaphore holders.
      if (thread_index == 0) return std::make_unique<locker>(count_then_insert_holders(cfg, db));
      break;
    case control::unordered_queue:
      // Every thread: the queue's order ignored by all, so that only the order is broken.
      return std::make_unique<locker>(unordered_queue_holders(cfg, db, thread_index));
    case control::reader_ignores_writer:
      // One rogue reader per process among sqllock's own rw_lock holders.
      if (thread_index == 0) return std::make_unique<locker>(rogue_reader_holders(cfg, db, thread_index));
      break;
    case control::leaked_place:
      // One leaking thread per process among sqllock's own fair_lock holders.
      if (thread_index == 0)
        return std::make_unique<locker>(
            leaked_place_holders(cfg, db, thread_index, holders(cfg, db, lock_kind::fair, thread_index)));
      break;
    case control::told_on_return:
      // Every thread: any holder a partition hits must be one that learns late.
      return std::make_unique<locker>(
          told_on_return_holders(cfg, db, holders(cfg, db, lock_kind::table, thread_index), plan));
    case control::rogue_count_down:  // a latch run: no lockers (fault/latch_worker.hpp)
    case control::sequential_multi:  // a multi run: no lockers (fault/multi_worker.hpp)
    case control::unguarded_write:   // sqllock's own lockers: only the write leaves its guard out
    case control::none: break;
  }
  return std::make_unique<locker>(holders(cfg, db, cfg.kind, thread_index));
}

}  // namespace sqllock::fault
