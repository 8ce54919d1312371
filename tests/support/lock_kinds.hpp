// Every lock kind of the public API behind one interface ("the lock under test"), so that one
// contract suite (tests/contract/) and tables of inputs (tests/bad_input*) run through all of
// them: table_lock, multi_lock, semaphore, fair_lock, rw_lock, advisory_lock, with_advisory_xact_lock,
// named_lock, with_row_lock. What a kind
// can do is said by its capability flags; what only one kind has stays in that kind's own tests.
// The fault harness (tests/fault/) holds its locks through the same kinds (make_holder).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>
#include <variant>
#include <vector>

#include "core/handle/database_impl.hpp"
#include "sqllock/database.hpp"
#include "sqllock/lease_claim.hpp"
#include "sqllock/row_lock.hpp"
#include "support/test_env.hpp"

namespace sqllock::test {

// Something that holds a lock until destroyed.
class held_lock {
 public:
  virtual ~held_lock() = default;
};

// Waits until the lock is free, however long (lock(), with_row_lock, with_advisory_xact_lock).
struct wait_forever {};

// How long an attempt may wait: not at all (try_lock / try_with_…), a timed wait given as
// milliseconds or hours (so that std::chrono::hours::max() reaches the library as the caller
// wrote it), or without a deadline.
using lock_wait = std::variant<std::monostate, std::chrono::milliseconds, std::chrono::hours, wait_forever>;

// What a kind can do (after SOCI's per-backend capability flags).
struct lock_capabilities {
  bool object = false;  // a lock object (lock/try_lock/unlock/release/holds); else scoped-only
  // object kinds: the owner of a hold is the calling thread, or the explicit owner key of
  // lock_settings::owner (every kind but the semaphore, whose permit is its own owner)
  bool owner_keyed = false;
  bool reentrant = false;           // the owner may take it again while holding it: the levels stack
  bool shared = false;              // has a shared mode (lock_shared …)
  bool fenced = false;              // every grant carries a fencing token that increases
  bool leased = false;              // a hold ends at its lease (ttl) unless renewed
  bool session_scoped = false;      // held by a server session: ends, and is reported lost, with it
  bool transaction_scoped = false;  // held by a transaction: ends with it (row locks, xact locks)
  bool loss_signal = false;         // lost_token() and on_lost tell the holder that the lock is gone
  bool stoppable = false;           // object kinds: waits take a std::stop_token (lock(stop), …)
  // MySQL's innodb_lock_wait_timeout counts whole seconds: a timed row-lock wait there lasts at
  // least 1 s.
  std::chrono::milliseconds wait_granularity{0};
  // The most a timed wait may overrun its deadline on an unloaded machine (scaled() stretches it).
  std::chrono::milliseconds wait_overshoot{1700};
  // session_scoped: how long the server may keep a killed session's locks after the client saw
  // its connection close (MariaDB ends the session's thread a moment later).
  std::chrono::milliseconds freed_after_session_end{0};
  // How soon another owner can take the lock once its holder's process is SIGKILLed, on an
  // unloaded machine (scaled() stretches it). Leased kinds: counted from the end of the lease the
  // holder set (its ttl), which outlives the holder. The others: from the kill, since the server
  // ends the holder's session or transaction when its connection closes, with no timeout.
  std::chrono::milliseconds freed_after_holder_killed{1000};
};

// Options every object kind has (table_lock_options and session_lock_options share them).
struct lock_settings {
  std::string owner;  // empty: the calling thread
  std::function<void(const std::exception&)> on_unlock_error;
  std::function<void()> on_lost;
  std::optional<std::chrono::milliseconds> keepalive;  // session kinds
  std::optional<std::chrono::milliseconds> ttl;        // leased kinds
  std::optional<bool> auto_renew;                      // leased kinds: false keeps the first lease
};

// A lock object (table_lock, advisory_lock, named_lock) behind one interface.
class lock_object {
 public:
  virtual ~lock_object() = default;
  virtual const std::string& name() const = 0;
  virtual void lock() = 0;
  virtual bool try_lock() = 0;
  virtual bool try_lock_for(std::chrono::milliseconds wait) = 0;
  virtual bool try_lock_until(std::chrono::system_clock::time_point deadline) = 0;
  // stoppable kinds (lock(stop), try_lock_for(wait, stop)); throw std::logic_error for others.
  virtual bool lock(std::stop_token stop) = 0;
  virtual bool try_lock_for(std::chrono::milliseconds wait, std::stop_token stop) = 0;
  virtual void unlock() noexcept = 0;
  virtual void release() = 0;
  virtual bool holds() const = 0;
  virtual std::stop_token lost_token() const = 0;
  // Levels this object holds (count()); nullopt for kinds that count only in their row.
  virtual std::optional<std::int64_t> count() const = 0;
  // fenced kinds; throws std::logic_error for others.
  virtual std::int64_t fence() const = 0;
  // shared kinds; throw std::logic_error for others.
  virtual void lock_shared() = 0;
  virtual void release_shared() = 0;
  // leased kinds: the hold, for a guard (sqllock/lease_claim.hpp); throws std::logic_error for others.
  virtual lease_claim claim() const = 0;
};

// What code under a lock can do: run statements — inside the lock's own transaction for the
// kinds that have one (row locks), else on a pooled connection of the handle.
class lock_section {
 public:
  virtual ~lock_section() = default;
  virtual detail::result exec(const std::string& statement, const std::vector<detail::value>& params = {}) = 0;
  // True when exec's statements commit or roll back with the lock.
  virtual bool transactional() const = 0;
  // The hold's fencing token; -1 for kinds without one (and for sections of run()).
  virtual std::int64_t fence() const { return -1; }
  // The re-entry probe: takes the lock again while holding it and releases that inner level.
  // Returns the fence the inner acquire reported (-1 for kinds without fences), -2 when it was
  // refused, nullopt when this section cannot re-enter (scoped kinds, sections of run()). Throws
  // what the inner acquire throws.
  virtual std::optional<std::int64_t> reenter() { return std::nullopt; }
  // Leased kinds: the hold's claim for a guard (sqllock/lease_claim.hpp), taken now — so it
  // throws what claim() throws (not_held, lock_lost once the holder was told of a loss); nullopt
  // for sections whose lock has no lease (and the negative controls' peers).
  virtual std::optional<lease_claim> claim() const { return std::nullopt; }
};

// Statements on a pooled connection of `db`, outside the lock: the object kinds' sections, and
// those of a peer that holds a lock by other means (the fault harness's rogue lockers) under the
// fence `fence` (-1: none). `claim` takes the hold's claim (lock_section::claim); none when empty.
class pooled_section : public lock_section {
 public:
  explicit pooled_section(const database& db, std::int64_t fence = -1, std::function<lease_claim()> claim = {})
      : db_(db), fence_(fence), claim_(std::move(claim)) {}
  detail::result exec(const std::string& statement, const std::vector<detail::value>& params) override;
  bool transactional() const override { return false; }
  std::int64_t fence() const override { return fence_; }
  std::optional<lease_claim> claim() const override {
    if (!claim_) return std::nullopt;
    return claim_();
  }

 private:
  const database& db_;
  std::int64_t fence_;
  std::function<lease_claim()> claim_;
};

// How the release at the end of a hold went: released (for scoped kinds: committed), not held any
// more, lost (taken over), failed (scoped kinds: rolled back), or unknown (the outcome of the
// release or commit statement was not seen).
enum class release_result { ok, not_held, lost, error, unknown };
// ok, notheld, lost, err, unk (the fault harness's history spelling).
std::string to_string(release_result r);

// Runs `release` (a lock's release(), or release_shared()), retrying one that failed for lack of a
// connection (up to 50 times, 100 ms apart); the first attempt's outcome (make_holder's holders
// release this way, so that no level is carried into the next hold).
release_result release_retrying(const std::function<void()>& release);

// A hold's loss callback (hooks.on_lost with its fence), registered on its lost_token() from the
// section's start until the release has returned: a loss signalled while the release runs (a
// deadline that passes while it retries) is a loss the holder was told of.
using lost_callback = std::stop_callback<std::function<void()>>;

// What a lock_holder runs under the lock.
struct hold_hooks {
  std::function<void(lock_section&)> body;          // the critical section; must not throw
  std::function<void()> before_release;             // the section is over; the release is next
  std::function<void(std::int64_t fence)> on_lost;  // loss_signal kinds: the lock was lost (any thread)
};

// One lock that one thread takes, uses and releases again and again (the fault harness's worker
// threads; its negative controls implement it with raw SQL).
class lock_holder {
 public:
  virtual ~lock_holder() = default;
  // Waits up to `wait` for the lock; nullopt when it was not taken (nothing run). Otherwise runs
  // hooks.body and hooks.before_release under it, releases it and says how the release went.
  // Throws what the acquire throws.
  virtual std::optional<release_result> hold(std::chrono::milliseconds wait, const hold_hooks& hooks) = 0;
};

struct lock_kind {
  // "table_lock", "multi_lock", "semaphore", "fair_lock", "rw_lock", "advisory_lock", "advisory_xact_lock",
  // "named_lock", "row_lock"
  std::string name;
  lock_capabilities can;
  // Takes `lock` on `db` as that kind, waiting as `wait` says; the result holds it until it is
  // destroyed, or is nullptr when the lock stayed held elsewhere. Throws what the library throws
  // (for the scoped kinds, an error before the lock was taken). Each take is a separate owner.
  std::function<std::unique_ptr<held_lock>(const database& db, const std::string& lock, lock_wait wait)> take;
  // Takes `lock` as `wait` says, runs `body` under it and releases it; false when not taken.
  std::function<bool(const database& db, const std::string& lock, lock_wait wait,
                     const std::function<void(lock_section&)>& body)>
      run;
  // Object kinds: a new lock object (nullptr for scoped-only kinds).
  std::function<std::unique_ptr<lock_object>(const database& db, const std::string& lock, const lock_settings& s)> make;
  // Whether the server shows `lock` held (a lock row, pg_locks, IS_USED_LOCK, a row lock), asked
  // through another handle `observer` on the same lock table.
  std::function<bool(const database& observer, const std::string& lock)> shown_held;
  // The level the database records for `lock` (table_lock's row count); nullopt when it keeps none.
  std::function<std::optional<std::int64_t>(const database& observer, const std::string& lock)> recorded_level;
  // session_scoped kinds: ends the server session that holds `lock`, from `admin`.
  std::function<void(const database& admin, const std::string& lock)> kill_holder_session;
  // leased kinds: deletes the rows that hold `lock` whatever their owner (the operator's forced
  // release: sqllock release --force), from `admin`.
  std::function<void(const database& admin, const std::string& lock)> force_release;
  // The dialects that have this kind, and, for the others, what its not_supported error must
  // name: the databases that have it and the alternative there.
  std::function<bool(dialect_kind)> supported_on;
  std::function<std::vector<std::string>(dialect_kind)> unsupported_says;
  // Entry points beyond take() that must also say not_supported (advisory keys, …).
  std::function<void(const database& db)> other_entry_points;
};

inline void PrintTo(const lock_kind& k, std::ostream* os) { *os << k.name; }

// A holder of `lock` of kind `k` on `db`. Object kinds: one lock object made with `s` (its owner
// the calling thread unless s.owner names one) for the holder's life; each section has the
// hold's fence (fenced kinds) and can re-enter; hooks.on_lost runs from the lock's lost_token;
// a release that fails for lack of a connection is retried (up to 50 times, 100 ms apart) so that
// no level is carried into the next hold, and the first attempt's outcome is reported. Scoped
// kinds (s unused): each hold is one k.run; the result is the commit's outcome (ok, unknown, or
// error: rolled back); errors before the section began are thrown.
std::unique_ptr<lock_holder> make_holder(const lock_kind& k, const database& db, const std::string& lock,
                                         const lock_settings& s = {});

// The kind called `name` (lock_kind::name), whichever dialect has it; throws
// std::invalid_argument for a name all_lock_kinds() does not have.
lock_kind lock_kind_named(const std::string& name);

// The kinds `dialect` has: table_lock everywhere, advisory locks on PostgreSQL, named_lock on
// MySQL/MariaDB, row locks on both servers.
std::vector<lock_kind> lock_kinds_of(dialect_kind dialect);

// multi_lock's companion of `name`: the lock under test of kind "multi_lock" is the set
// {name, companion_name(name)}. Distinct for distinct names, valid when `name` is.
std::string companion_name(const std::string& name);

// Every kind, whether `dialect` has it or not.
std::vector<lock_kind> all_lock_kinds();

// The session lock of `dialect`: advisory_lock on PostgreSQL, named_lock on MySQL/MariaDB;
// throws std::invalid_argument for a dialect without one.
lock_kind session_lock_kind(dialect_kind dialect);

// The targets of all_targets() that have a session lock: PostgreSQL's, then MySQL/MariaDB's.
std::vector<target> session_lock_targets();

// The kinds that work on target `t`: those of its dialect, less the session locks behind a
// transaction-mode pooler (which refuses them).
std::vector<lock_kind> lock_kinds_for(const target& t);

// One kind on one target: the parameter of the contract suites.
struct lock_case {
  lock_kind kind;
  target where;
};
inline void PrintTo(const lock_case& c, std::ostream* os) { *os << c.kind.name << "_" << c.where.name; }

// kind × target over `targets`, for the kinds that work there and pass `keep` (all when empty).
std::vector<lock_case> lock_cases(const std::vector<target>& targets,
                                  const std::function<bool(const lock_kind&)>& keep = {});

// kind × target where the kind is refused (not_supported) on the target's dialect.
std::vector<lock_case> unsupported_lock_cases(const std::vector<target>& targets);

// gtest's name for a lock_case parameter: kind_target.
std::string lock_case_name(const lock_case& c);

}  // namespace sqllock::test
