// One contending process of sqllock_contention (bench/contention/): it opens its own
// sqllock::database, and from a common start instant until a common end loops try_lock_for →
// hold → release on its lock name, recording when each grant came and when it was given back
// (CLOCK_MONOTONIC, the same clock in every process of the machine), the errors by type and how
// far a try_lock_for returned past its deadline. The result travels to the parent as a text file.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::contention {

// CLOCK_MONOTONIC in nanoseconds.
std::int64_t mono_ns();
void sleep_until_ns(std::int64_t at);

enum class lock_kind { table, semaphore, fair, rw, xact };

struct grant {
  std::int64_t granted_ns = 0;   // the lock call returned with the lock (xact: the body started)
  std::int64_t release_ns = 0;   // the hold ended: the release was about to be sent
  std::int64_t released_ns = 0;  // the release returned (xact: the commit)
};

struct contender_result {
  bool opened = false;  // the database handle could be opened
  std::vector<grant> grants;
  std::int64_t attempts = 0;                   // try_lock_for calls (xact: try_with_advisory_xact_lock_for)
  std::int64_t timeouts = 0;                   // ... that returned without the lock
  std::int64_t worst_overrun_ns = 0;           // the latest return past an attempt's deadline, 0 when none
  std::map<std::string, std::int64_t> errors;  // exception type (or "lost") → count
  std::string first_error;                     // "type: what()" of the first one
};

struct contender_config {
  std::string uri;
  lock_kind kind = lock_kind::table;
  std::string name;
  std::chrono::milliseconds hold{2};
  std::chrono::milliseconds wait{1000};
};

class contender {
 public:
  // Opens the database handle (pool of 2 connections) and the lock object; a failure is recorded
  // as an error and leaves the contender idle.
  explicit contender(contender_config config);
  ~contender();
  contender(const contender&) = delete;
  contender& operator=(const contender&) = delete;

  // Attempts until end_ns (CLOCK_MONOTONIC); a grant obtained before end_ns is still held and released.
  void run_until(std::int64_t end_ns);

  // Closes the lock object and the handle (so that its connections end now), then gives the result.
  contender_result finish();

 private:
  void note_error(const std::string& type, const std::string& what);
  // Records one grant: holds for config_.hold, then calls release.
  void hold_and_release(const std::function<void()>& release);
  // Sets attempt_ and close_ for a kind with levels (Lock: table_lock, fair_lock or rw_lock).
  template <class Lock, class Options>
  void open_leveled(const std::function<void()>& on_lost,
                    const std::function<void(const std::exception&)>& on_unlock_error);

  contender_config config_;
  contender_result result_;
  std::shared_ptr<std::atomic<std::int64_t>> lost_;  // on_lost calls, from the library's lease thread
  std::optional<database> db_;
  std::function<bool()> attempt_;  // one try_lock_for; true when granted (hold and release done)
  std::function<void()> close_;    // destroys the lock object
};

// The result as text lines (G granted release released / N attempts timeouts overrun opened /
// E count type / F first error), and back. read_result returns nullopt for a missing or torn file.
void write_result(const contender_result& r, const std::string& path);
std::optional<contender_result> read_result(const std::string& path);

}  // namespace sqllock::contention
