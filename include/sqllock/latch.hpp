// sqllock/latch.hpp — a count-down latch across processes and hosts: waiters block until N
// count-downs have happened. Works on every database, including SQLite.
//
// A latch named "load-2024-06-01" is armed with a count (try_create(3)); every count_down()
// lowers it by one, and at zero the latch is *open*: wait() returns at once from then on. Use it
// to start work when N others have finished theirs (N loaders, then one reporter), like
// std::latch, but the count lives in a row of the database, so counters and waiters may be any
// processes that reach it.
//
//   sqllock::latch loaded(db, "load-2024-06-01");
//   loaded.try_create(3);                                  // once, by whoever plans the work
//   ... each of 3 loaders, when done: loaded.count_down("loader-" + std::to_string(i));
//   if (loaded.wait_for(std::chrono::hours(1)) == sqllock::latch_wait_result::open) report();
//
// Absent is not open: waiting on a latch that does not exist — never created, misspelled, deleted
// by the reaper, or abandoned past its ttl — returns latch_wait_result::absent, never open, and a
// count-down of it throws latch_not_armed. (A latch library that treats a missing latch as "count
// 0" turns every typo into a latch that is already open.)
//
// Participants: count_down(participant) counts each participant id once per generation, so a
// count-down retried after outcome_unknown (the reply was lost: it may or may not have counted)
// cannot count twice. The plain count_down() counts every call.
//
// Generations: an open latch may be armed again (try_create), which starts its next generation;
// waiters of the earlier generation still see it open. Arming never replaces an armed latch: the
// second try_create of a latch still counting returns nullopt. No latch holds a lease: a
// participant that dies before counting down leaves the latch armed — wait with a timeout, or arm
// it with a ttl. The reaper (sqllock/reaper.hpp) deletes open latches after a retention period
// and latches whose ttl ran out. Every time is the database's clock.
//
// A latch object is a name on a database handle and holds nothing: copyable, and safe to use
// from many threads at once. Failures throw (sqllock/error.hpp).
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "sqllock/database.hpp"
#include "sqllock/deadline.hpp"

namespace sqllock {

// The largest count a latch may be armed with. Each participant count-down leaves a row, and a
// count in the millions is a job queue, not a latch.
inline constexpr std::int64_t max_latch_count = 1000000;

struct latch_options {
  // How long the armed latch may wait for its count-downs. Once the ttl has run out (by the
  // database clock) before the latch opened, the latch counts as absent: waiters return absent,
  // count-downs throw latch_not_armed, try_create arms a new latch in its place, and the reaper
  // deletes it. No value (the default): the latch waits for ever. Between 1 ms and 365 days.
  std::optional<std::chrono::milliseconds> ttl{};
};

// How a wait ended.
enum class latch_wait_result {
  open,       // the latch reached zero (the generation waited for opened, even if re-armed since)
  timed_out,  // the deadline passed, or a stop was requested on the wait's std::stop_token, while
              // the latch was still armed (the caller's stop_source tells which)
  absent,     // there is no such latch, or it was deleted or its ttl ran out while waited for
};

// Returns "open", "timed_out" or "absent".
SQLLOCK_API std::string_view to_string(latch_wait_result result) noexcept;

// What one count-down did.
struct latch_count_down_result {
  // True when this call lowered the count. False only for count_down(participant) when that
  // participant was already counted in this generation: nothing changed.
  bool counted = false;
  // The count after the call; 0 when the latch is open.
  std::int64_t remaining = 0;
  bool open() const noexcept { return remaining == 0; }
};

// A latch as the database saw it when it was read.
struct latch_state {
  std::int64_t count = 0;       // count-downs still needed; 0 when open
  std::int64_t initial = 0;     // the count this generation was armed with
  std::int64_t generation = 0;  // 1 for a new latch, + 1 for every re-arming
  bool open = false;            // count == 0
  std::string armed_at;         // when this generation was armed: UTC, "YYYY-MM-DDTHH:MM:SS.mmmZ"
  std::string opened_at;        // when it opened, in the same form; empty while armed
  // Time left of an armed latch's ttl by the database clock; no value without a ttl or once open.
  std::optional<std::chrono::milliseconds> expires_in;
  // The participant ids counted in this generation, byte-wise sorted (plain count-downs leave no
  // name, so initial - count may exceed their number).
  std::vector<std::string> arrived;
};

class SQLLOCK_API latch {
 public:
  // Names the latch `name` in db's latch table (the lock table's `<table>_latches`, created by
  // migrate()). Nothing is sent to the database. Throws invalid_argument for an empty name, one
  // over 255 bytes, invalid UTF-8 or an embedded NUL. Names are compared byte for byte.
  latch(const database& db, std::string_view name);

  // Arms the latch with `count` count-downs to go: creates it (generation 1), or arms an open
  // latch again (generation + 1, arrivals start afresh), or replaces one whose ttl ran out.
  // Returns the generation armed, or nullopt when the latch is armed and not yet open (re-arming
  // is explicit: it never resets a latch others are still counting down). One statement
  // (MySQL: two). Throws invalid_argument for a count outside 1–max_latch_count or a ttl outside
  // 1 ms–365 days (nothing is sent); outcome_unknown when the connection broke after the
  // statement was sent (state() tells whether it was armed); schema_error when migrations have
  // not run; connection_error / backend_error.
  [[nodiscard]] std::optional<std::int64_t> try_create(std::int64_t count, const latch_options& options = {});

  // Counts down once. At zero the latch opens and its waiters wake. One statement (MySQL: two).
  // Throws latch_not_armed when the latch is absent or already open (nothing changed);
  // outcome_unknown when the connection broke after the statement was sent — it may have
  // counted, and retrying may count twice: use count_down(participant) where that matters;
  // connection_error / backend_error / schema_error otherwise.
  latch_count_down_result count_down();

  // Counts down once for `participant` in the current generation: a participant already counted
  // in it is not counted again (counted == false, nothing changed), also after the latch opened.
  // So after outcome_unknown, retrying with the same id is safe. One statement on PostgreSQL, a
  // short transaction elsewhere. Throws invalid_argument for an empty id, one over 255 bytes,
  // invalid UTF-8 or a NUL (nothing is sent); latch_not_armed when the latch is absent, or open
  // without this participant among its arrivals; otherwise as count_down().
  latch_count_down_result count_down(std::string_view participant);

  // Blocks until the latch is open (open) or absent (absent). Waiters on PostgreSQL wake on the
  // NOTIFY the opening count-down sends (one round trip after it commits); elsewhere, and behind
  // a transaction-mode pooler (`?prepare=off`), they poll with capped, jittered backoff (5 ms
  // doubling to 500 ms). Throws connection_error / backend_error / schema_error.
  latch_wait_result wait();

  // Like wait(), but returns timed_out when a stop is requested on `stop` first (at once, or when
  // a statement in flight returns; one requested before the call leaves one check).
  [[nodiscard]] latch_wait_result wait(std::stop_token stop);

  // Like wait(), but returns timed_out when the deadline passes or a stop is requested on `stop`
  // first. Never sleeps past it; a
  // deadline already passed checks once. Any std::chrono duration or clock; saturates instead of
  // overflowing (duration::max() waits like wait()).
  template <class Rep, class Period>
  [[nodiscard]] latch_wait_result wait_for(const std::chrono::duration<Rep, Period>& timeout,
                                           std::stop_token stop = {}) {
    return wait_until_steady(detail::steady_deadline_after(timeout), std::move(stop));
  }
  template <class Clock, class Duration>
  [[nodiscard]] latch_wait_result wait_until(const std::chrono::time_point<Clock, Duration>& deadline,
                                             std::stop_token stop = {}) {
    return wait_until_steady(detail::steady_deadline_at(deadline), std::move(stop));
  }

  // The latch as stored now, with the participants counted in its generation; nullopt when it is
  // absent (also when its ttl ran out). Two statements. Throws connection_error / backend_error /
  // schema_error.
  [[nodiscard]] std::optional<latch_state> state() const;

  // The latch's name.
  const std::string& name() const noexcept { return name_; }

 private:
  latch_wait_result wait_until_steady(std::optional<std::chrono::steady_clock::time_point> deadline,
                                      std::stop_token stop);

  database db_;
  std::string name_;
};

}  // namespace sqllock
