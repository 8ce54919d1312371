// How a hold tells its holders that it was lost — a table_lock lease that could not be renewed
// (lease_registry), a pinned session that died (pinned_session): one stop_source, the on_lost
// callbacks of the lock objects that share the hold, and the rule that it fires once per hold.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <vector>

namespace sqllock::detail {

using callbacks = std::vector<std::function<void()>>;

// Runs each callback, swallowing exceptions (a user callback must not take a thread down).
void run_callbacks(callbacks& cbs) noexcept;

// run_callbacks on one of sqllock's own threads (a watchdog, keepalive or pinger thread), holding
// `keep` while they run. A callback may destroy the last lock object and with it the last handle;
// the handle's destructor then joins (or waits for) the very thread that runs the callbacks. So
// `keep` — a reference to the handle's state — is dropped afterwards by a short-lived thread of
// its own. An empty `keep` (the handle is being destroyed already) just runs them.
void run_callbacks_keeping(callbacks& cbs, std::shared_ptr<const void> keep) noexcept;

// One hold's loss signal. Thread-safe; its mutex is never held while anything is called out.
class loss_signal {
 public:
  // A new hold: a fresh stop source, not fired. The callbacks stay (they belong to lock objects).
  void rearm();
  // Fires the signal for the current hold: requests stop and returns the callbacks, for the
  // caller to run once it has let go of its own locks. Returns nothing when already fired.
  [[nodiscard]] callbacks fire();
  bool fired() const;
  // Signalled when the current hold is lost.
  std::stop_token token() const;

  // The callback of lock object `key` (replacing an earlier one), or none.
  void set(const void* key, std::function<void()> callback);
  void clear(const void* key);

 private:
  mutable std::mutex mu_;
  std::stop_source stop_;
  bool fired_ = false;
  std::map<const void*, std::function<void()>> callbacks_;  // by lock object
};

}  // namespace sqllock::detail
