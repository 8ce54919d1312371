// One lock kind behind one interface, so the worker's critical section is the same for all:
// acquire resource i (waiting up to a timeout), run the section, release, and say how the
// release went. Also the two deliberately unsafe peers of the negative controls.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/database_impl.hpp"
#include "fault/config.hpp"

namespace sqllock::fault {

// What a critical section can do while it holds the lock.
class section {
 public:
  virtual ~section() = default;
  // The hold's fencing token; -1 for kinds without one.
  virtual std::int64_t fence() const = 0;
  // Runs one statement ($1… placeholders): on a pooled connection, or inside the lock's own
  // transaction when transactional(). Throws sqllock's exceptions.
  virtual detail::result exec(const std::string& statement, const std::vector<detail::value>& params) = 0;
  // True when exec's statements commit or roll back with the lock (row locks).
  virtual bool transactional() const = 0;
  // Takes the lock again while holding it and releases that inner level; returns the fence the
  // inner acquire reported (-1 for kinds without fences), -2 when it was refused, nullopt when the
  // kind is not re-entrant.
  virtual std::optional<std::int64_t> reenter() = 0;
};

enum class release_result { ok, not_held, lost, error, unknown };
std::string to_string(release_result r);

struct hold_hooks {
  std::function<void(section&)> body;    // the critical section; must not throw
  std::function<void()> before_release;  // the section is over; the release is next
  std::function<void(std::int64_t fence)> on_lost;  // the lost-lock signal fired (any thread)
};

class locker {
 public:
  virtual ~locker() = default;
  // Waits up to `timeout` for resource `i`; nullopt when not acquired (body not run). Otherwise
  // runs hooks.body and hooks.before_release under the lock, releases and returns the result.
  // Throws what the acquire throws.
  virtual std::optional<release_result> hold(int i, std::chrono::milliseconds timeout, const hold_hooks& hooks) = 0;
};

// The locker of cfg.kind (or of the control cfg.ctl for the threads it affects) for one worker
// thread, over the process's shared handle `db`.
std::unique_ptr<locker> make_locker(const run_config& cfg, const database& db, int thread_index);

}  // namespace sqllock::fault
