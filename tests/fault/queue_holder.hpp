// The queued kinds of the fault harness (--kind fair, --kind rw): each worker thread holds the
// run's names through sqllock::fair_lock or sqllock::rw_lock (lease cfg.lease), one lock object
// per name for the thread's life, under the owner key queue_owner_key(thread) — so that the queue
// log's places (owner token "<session>/k:<key>", fault/queue_log.hpp) name their worker thread.
// A fair lock's holds are all writes; an rw worker takes the write lock one time in three, else
// the read lock. The section (a queue_section) tells the worker its mode: a read section only
// reads (fault/worker.cpp), a write section runs the fenced and the unfenced write.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fault/config.hpp"
#include "support/lock_kinds.hpp"

namespace sqllock::fault {

// A section on a pooled connection that holds its name in write or read mode under the ticket
// `fence` (sqllock's queued locks, and the queue controls' rogues, fault/queue_rogue.hpp).
class queue_section : public test::pooled_section {
 public:
  // `reenter`: the re-entry probe of the hold's own mode (test::lock_section::reenter); `claim`:
  // the hold's claim for a guard (test::lock_section::claim). None when empty.
  queue_section(const database& db, std::int64_t fence, bool write,
                std::function<std::optional<std::int64_t>()> reenter = {}, std::function<lease_claim()> claim = {})
      : pooled_section(db, fence, std::move(claim)), write_(write), reenter_(std::move(reenter)) {}
  bool write() const noexcept { return write_; }
  std::optional<std::int64_t> reenter() override { return reenter_ ? reenter_() : std::nullopt; }

 private:
  bool write_;
  std::function<std::optional<std::int64_t>()> reenter_;
};

// The owner key of worker thread `thread` of this process: "q<pid>.<thread>".
std::string queue_owner_key(int thread);

// One fair_lock (cfg.kind fair) or rw_lock (rw) holder per resource (holders[i] of
// resource_name(i)) for worker thread `thread`, over `db`: each hold is a try_lock_for (or
// try_lock_shared_for), the section (a queue_section, on_lost from the lock's lost_token) and the
// release of that mode, retried while it fails for lack of a connection (test::release_retrying).
std::vector<std::unique_ptr<test::lock_holder>> queue_holders(const run_config& cfg, const database& db, int thread);

}  // namespace sqllock::fault
