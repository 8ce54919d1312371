// The locks one worker thread takes: one holder per resource, so that the worker's critical
// section is the same for every lock kind. The holders are the shared test adapter's
// (support/lock_kinds.hpp: sections, fences, the re-entry probe, release outcomes), or the
// deliberately unsafe peers of the negative controls (fault/rogue_locker.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "fault/config.hpp"
#include "support/lock_kinds.hpp"

namespace sqllock::fault {

using section = test::lock_section;
using release_result = test::release_result;
using hold_hooks = test::hold_hooks;

class locker {
 public:
  // holders[i] holds resource_name(i).
  explicit locker(std::vector<std::unique_ptr<test::lock_holder>> holders) : holders_(std::move(holders)) {}
  // Waits up to `timeout` for resource `i` and holds it with `hooks` (test::lock_holder::hold).
  std::optional<release_result> hold(int i, std::chrono::milliseconds timeout, const hold_hooks& hooks) {
    return holders_.at(static_cast<std::size_t>(i))->hold(timeout, hooks);
  }

 private:
  std::vector<std::unique_ptr<test::lock_holder>> holders_;
};

// Tells the nemesis that the calling thread's section will last until a CLOCK_MONOTONIC time
// (board::section_until), for holders whose sections outlast the worker's own (a control's).
using section_plan = std::function<void(std::int64_t until)>;

// The locker of cfg.kind (or of the control cfg.ctl for the threads it affects) for one worker
// thread, over the process's shared handle `db`. Throws what making the lock objects throws
// (not_supported where the kind is refused).
std::unique_ptr<locker> make_locker(const run_config& cfg, const database& db, int thread_index,
                                    const section_plan& plan = {});

}  // namespace sqllock::fault
