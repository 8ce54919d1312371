// The lock kinds of `sqllock run` (--kind): one interface over table_lock (or multi_lock, for
// several --lock), a semaphore's permit, fair_lock, rw_lock (either mode), advisory_lock,
// named_lock and row locks, so the waiting loop and the command's supervision exist once.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::cli {

enum class run_kind { table, row, advisory, named, semaphore, fair, rw };

// The kind named `text`. Throws usage_error for an unknown name.
run_kind parse_run_kind(std::string_view text);

// What runs while the lock is held: receives a token that is signalled if the lock is lost
// (never, for row locks) and returns sqllock's exit status.
using locked_body = std::function<int(std::stop_token lost)>;

// One lock of some kind, as `sqllock run` holds it.
class run_lock {
 public:
  virtual ~run_lock() = default;
  // One attempt without waiting. When the lock is obtained, runs body under it, releases it and
  // returns body's status (or exit_lock_lost when releasing shows the lock ended early);
  // std::nullopt when the lock is held elsewhere (body did not run). The attempt's statements (not
  // body's, nor the release's) end by `bound` + 1 s on a silently cut network
  // (sqllock/statement_deadline.hpp); a row lock's attempt, whose transaction runs body, only by
  // the statement bound. Throws sqllock errors.
  virtual std::optional<int> try_run(const locked_body& body, std::chrono::steady_clock::time_point bound =
                                                                  std::chrono::steady_clock::time_point::max()) = 0;

  // Kinds whose waiters keep a place in a queue (fair, rw): an attempt that fails gives its place
  // back, so they wait with wait_turn, not by repeating try_run.
  virtual bool queues() const noexcept { return false; }
  // queues() kinds: waits for the lock until `deadline` (time_point::max(): as long as it takes)
  // or a stop on `stop`, keeping its place in the queue meanwhile, and says whether it got it;
  // then run_held must follow. A stop ends the wait at once and gives the place back. Any thread
  // may call run_held afterwards. Throws sqllock errors; the other kinds throw std::logic_error.
  // (A time_point, not an optional one: GCC 12 at -Os reports a false -Wmaybe-uninitialized for
  // std::optional<time_point>.)
  virtual bool wait_turn(std::chrono::steady_clock::time_point deadline, std::stop_token stop);
  // Runs body under the lock wait_turn obtained, releases it and returns as try_run does.
  virtual int run_held(const locked_body& body);

  // The following are for body, while it runs under the lock, on the thread that runs it.
  // Whether the lock is still held and its lease has not run out by the local clock — false as
  // soon as the local deadline passes, even while a renewal statement is still under way. Always
  // true for a row lock (it has no lease and no loss signal).
  virtual bool holds() const noexcept = 0;
  // The fencing token of each name (settings.name, then settings.more_names, in that order);
  // empty for the kinds without one (row, advisory, named).
  virtual std::vector<std::int64_t> fences() const { return {}; }
  // --kind semaphore: the permit's slot (fences rise per name and slot); nullopt for other kinds.
  virtual std::optional<std::int64_t> slot() const { return std::nullopt; }
};

struct run_lock_settings {
  std::string name;
  // More names: the lock is a multi_lock of name and these (--kind table only), all or none.
  std::vector<std::string> more_names;
  std::chrono::milliseconds ttl;  // the leased kinds only: table, semaphore, fair, rw
  std::int64_t permits = 1;       // --kind semaphore: its number of permits
  std::function<void()> on_lost;  // must not block or throw; not called for row locks
  bool shared = false;            // --kind rw: the read (shared) lock rather than the write lock
};

// How messages name the lock: "lock 'a'", or "locks 'a', 'b' and 'c'" for several names
// (printable() applied).
std::string run_lock_label(const run_lock_settings& settings);

// The lock of `kind` on `db`: a multi_lock when settings.more_names is not empty. Throws
// not_supported when db's dialect lacks that kind, usage_error for several names with a kind other
// than table, invalid_argument for a bad name (or a name given twice).
std::unique_ptr<run_lock> make_run_lock(run_kind kind, const database& db, const run_lock_settings& settings);

}  // namespace sqllock::cli
