#include "support/lock_kinds.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <concepts>
#include <future>
#include <stdexcept>
#include <thread>

#include "common/sha256.hpp"
#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/multi_lock.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/rw_lock.hpp"
#include "sqllock/semaphore.hpp"
#include "sqllock/status.hpp"
#include "sqllock/table_lock.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::test {
namespace {

// A fresh explicit owner key per take: the holder may then be destroyed on any thread (a
// thread-owned lock released from another thread would be not_held), and two takes are always
// two owners, even on one handle.
std::string next_owner() {
  static std::atomic<int> n{0};
  return "take-owner-" + std::to_string(n++);
}

// A lock object held until the holder is destroyed (its destructor releases it).
template <class Lock>
class object_holder final : public held_lock {
 public:
  explicit object_holder(std::unique_ptr<Lock> lock) : lock_(std::move(lock)) {}

 private:
  std::unique_ptr<Lock> lock_;
};

// The attempt `wait` describes, on a lock object.
template <class Lock>
bool attempt(Lock& lock, const lock_wait& wait) {
  return std::visit(
      [&](const auto& w) {
        using W = std::decay_t<decltype(w)>;
        if constexpr (std::is_same_v<W, std::monostate>)
          return lock.try_lock();
        else if constexpr (std::is_same_v<W, wait_forever>) {
          lock.lock();
          return true;
        } else
          return lock.try_lock_for(w);
      },
      wait);
}

// The attempt `wait` describes; a holder when it took the lock.
template <class Lock>
std::unique_ptr<held_lock> hold_object(std::unique_ptr<Lock> lock, const lock_wait& wait) {
  if (!attempt(*lock, wait)) return nullptr;
  return std::make_unique<object_holder<Lock>>(std::move(lock));
}

// A scoped lock (with_row_lock, with_advisory_xact_lock) held by a thread whose function waits
// until the holder is destroyed. `attempt(fn)` takes the lock, runs fn under it, and returns
// whether it ran.
class scoped_holder final : public held_lock {
 public:
  using attempt_fn = std::function<bool(const std::function<void()>& fn)>;

  // Returns the holder once the lock is held, nullptr when it was not taken; rethrows the
  // attempt's error when it failed before taking it.
  static std::unique_ptr<held_lock> start(attempt_fn attempt) {
    auto h = std::unique_ptr<scoped_holder>(new scoped_holder);
    auto taken = h->taken_.get_future();
    h->thread_ = std::thread([h = h.get(), attempt = std::move(attempt)] { h->run(attempt); });
    if (!taken.get()) return nullptr;  // the thread has finished (or is finishing): joined below
    return h;
  }

  ~scoped_holder() override {
    release_.set_value();
    thread_.join();
  }

 private:
  scoped_holder() = default;

  void run(const attempt_fn& attempt) {
    bool told = false;
    try {
      const bool ran = attempt([&] {
        told = true;
        taken_.set_value(true);
        release_.get_future().wait();
      });
      if (!ran) {
        told = true;
        taken_.set_value(false);
      }
    } catch (const std::exception& e) {
      if (!told)
        taken_.set_exception(std::current_exception());
      else
        ADD_FAILURE() << "ending a held scoped lock failed: " << e.what();
    }
  }

  std::promise<bool> taken_;
  std::promise<void> release_;
  std::thread thread_;
};

// A lock object behind lock_object.
template <class Lock>
class object_adapter final : public lock_object {
 public:
  explicit object_adapter(std::unique_ptr<Lock> lock) : lock_(std::move(lock)) {}
  const std::string& name() const override { return lock_->name(); }
  void lock() override { lock_->lock(); }
  bool try_lock() override { return lock_->try_lock(); }
  bool try_lock_for(std::chrono::milliseconds wait) override { return lock_->try_lock_for(wait); }
  bool try_lock_until(std::chrono::system_clock::time_point deadline) override {
    return lock_->try_lock_until(deadline);
  }
  // clang-format off
  bool lock(std::stop_token stop) override {
    if constexpr (requires(Lock& l, std::stop_token s) { { l.lock(s) } -> std::same_as<bool>; })
      return lock_->lock(std::move(stop));
    else
      throw std::logic_error("no wait with a stop token: " + lock_->name());
  }
  bool try_lock_for(std::chrono::milliseconds wait, std::stop_token stop) override {
    if constexpr (requires(Lock& l, std::stop_token s) { { l.lock(s) } -> std::same_as<bool>; })
      return lock_->try_lock_for(wait, std::move(stop));
    else
      throw std::logic_error("no wait with a stop token: " + lock_->name());
  }
  // clang-format on
  void unlock() noexcept override { lock_->unlock(); }
  void release() override { lock_->release(); }
  bool holds() const override { return lock_->holds(); }
  std::stop_token lost_token() const override { return lock_->lost_token(); }
  std::optional<std::int64_t> count() const override {
    if constexpr (requires(const Lock& l) { l.count(); })
      return lock_->count();
    else
      return std::nullopt;  // counted only in its row
  }
  std::int64_t fence() const override {
    if constexpr (requires(const Lock& l) { l.fence(); })
      return lock_->fence();
    else
      throw std::logic_error("no fence: " + lock_->name());
  }
  lease_claim claim() const override {
    if constexpr (claimable<Lock>)
      return lock_->claim();
    else
      throw std::logic_error("no lease to claim: " + lock_->name());
  }
  // clang-format 14 would space `requires(Lock& l)` as `requires(Lock & l)`.
  // clang-format off
  void lock_shared() override {
    if constexpr (requires(Lock& l) { l.lock_shared(); })
      lock_->lock_shared();
    else
      throw std::logic_error("no shared mode: " + lock_->name());
  }
  void release_shared() override {
    if constexpr (requires(Lock& l) { l.release_shared(); })
      lock_->release_shared();
    else
      throw std::logic_error("no shared mode: " + lock_->name());
  }
  // clang-format on

 private:
  std::unique_ptr<Lock> lock_;
};

// Runs one statement ($1… placeholders) inside a row lock's transaction, as sql() runs one on a
// handle.
detail::result exec_in(row_lock_tx& tx, const std::string& statement, const std::vector<detail::value>& params) {
  std::vector<sql_value> p;
  for (const auto& v : params) std::visit([&](const auto& x) { p.emplace_back(x); }, v);
  const auto r = tx.exec(statement, std::span<const sql_value>(p));
  detail::result out;
  out.rows = r.rows;
  out.affected = r.affected;
  return out;
}

// Statements inside with_row_lock's transaction.
class row_section final : public lock_section {
 public:
  explicit row_section(row_lock_tx& tx) : tx_(tx) {}
  detail::result exec(const std::string& statement, const std::vector<detail::value>& params) override {
    return exec_in(tx_, statement, params);
  }
  bool transactional() const override { return true; }

 private:
  row_lock_tx& tx_;
};

// An object kind's section: on the pool, with the hold's fence, able to re-enter `lock`, and its
// lease's claim when it has one.
class object_section final : public pooled_section {
 public:
  object_section(const database& db, lock_object& lock, const lock_capabilities& can)
      : pooled_section(db, can.fenced ? lock.fence() : -1,
                       can.leased ? std::function<lease_claim()>([&lock] { return lock.claim(); })
                                  : std::function<lease_claim()>()),
        lock_(lock), can_(can) {}
  std::optional<std::int64_t> reenter() override {
    if (!lock_.try_lock()) return -2;
    const std::int64_t inner = can_.fenced ? lock_.fence() : -1;
    lock_.unlock();
    return inner;
  }

 private:
  lock_object& lock_;
  const lock_capabilities& can_;
};

}  // namespace

release_result release_retrying(const std::function<void()>& release) {
  std::optional<release_result> first;
  for (int attempt = 0; attempt < 50; ++attempt) {
    try {
      release();
      return first.value_or(release_result::ok);
    } catch (const not_held&) {
      return first.value_or(release_result::not_held);
    } catch (const lock_lost&) {
      return first.value_or(release_result::lost);
    } catch (const outcome_unknown&) {
      if (!first) first = release_result::unknown;
    } catch (const error&) {
      if (!first) first = release_result::error;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return *first;
}

namespace {

// make_holder for object kinds: one lock object for the holder's life.
class object_lock_holder final : public lock_holder {
 public:
  object_lock_holder(const database& db, std::unique_ptr<lock_object> lock, const lock_capabilities& can)
      : db_(db), lock_(std::move(lock)), can_(can) {}

  std::optional<release_result> hold(std::chrono::milliseconds wait, const hold_hooks& hooks) override {
    if (!lock_->try_lock_for(wait)) return std::nullopt;
    std::optional<lost_callback> on_lost;  // through the release too: a loss may come while it retries
    {
      object_section s(db_, *lock_, can_);
      on_lost.emplace(lock_->lost_token(), [&hooks, fence = s.fence()] { hooks.on_lost(fence); });
      hooks.body(s);
      hooks.before_release();
    }
    return release_retrying([&] { lock_->release(); });
  }

 private:
  const database& db_;
  std::unique_ptr<lock_object> lock_;
  lock_capabilities can_;
};

// make_holder for scoped kinds: each hold is one run().
class scoped_lock_holder final : public lock_holder {
 public:
  scoped_lock_holder(const database& db, std::string lock, decltype(lock_kind::run) run)
      : db_(db), lock_(std::move(lock)), run_(std::move(run)) {}

  std::optional<release_result> hold(std::chrono::milliseconds wait, const hold_hooks& hooks) override {
    bool entered = false;
    try {
      const bool ran = run_(db_, lock_, wait, [&](lock_section& s) {
        entered = true;
        hooks.body(s);
        hooks.before_release();
      });
      if (!ran) return std::nullopt;
      return release_result::ok;  // committed: the section's writes and the lock's end
    } catch (const outcome_unknown&) {
      if (!entered) throw;
      return release_result::unknown;
    } catch (const error&) {
      if (!entered) throw;
      return release_result::error;  // rolled back
    }
  }

 private:
  const database& db_;
  std::string lock_;
  decltype(lock_kind::run) run_;
};

// The first field of the first row, "" when there is none or it is NULL.
std::string first_field(const detail::result& r) {
  if (r.rows.empty() || r.rows[0].empty() || !r.rows[0][0]) return "";
  return *r.rows[0][0];
}

// pg_locks rows granted for `key` in `mode`.
std::int64_t pg_granted(const database& db, const advisory_key& key, const std::string& mode) {
  const auto bits = static_cast<std::uint64_t>(key.value());
  return std::stoll(
      first_field(sql(db,
                      "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                      "AND CAST(classid AS bigint) = CAST($1 AS bigint) AND CAST(objid AS bigint) = CAST($2 AS bigint) "
                      "AND objsubid = CAST($3 AS integer) AND mode = $4",
                      {static_cast<std::int64_t>(bits >> 32), static_cast<std::int64_t>(bits & 0xffffffffu),
                       std::int64_t{key.is_pair() ? 2 : 1}, mode})));
}

std::string not_postgresql(dialect_kind d) { return d == dialect_kind::mysql ? "named_lock" : "table_lock"; }
std::string not_mysql(dialect_kind d) { return d == dialect_kind::postgresql ? "advisory_lock" : "table_lock"; }

// What every object kind does the same way: take (a fresh owner per take), run (lock, body on the
// pool, unlock) and make (the shared settings, plus ttl or keepalive where the kind has one).
template <class Lock, class Options>
void add_object_entry_points(lock_kind& k) {
  k.take = [](const database& db, const std::string& name, lock_wait wait) {
    Options o;
    o.owner = next_owner();
    return hold_object(std::make_unique<Lock>(db, name, o), wait);
  };
  k.run = [](const database& db, const std::string& name, lock_wait wait,
             const std::function<void(lock_section&)>& body) {
    Lock lock(db, name);
    if (!attempt(lock, wait)) return false;
    std::lock_guard guard(lock, std::adopt_lock);
    pooled_section s(db);
    body(s);
    return true;
  };
  k.make = [](const database& db, const std::string& name, const lock_settings& s) -> std::unique_ptr<lock_object> {
    Options o;
    o.owner = s.owner;
    if (s.on_unlock_error) o.on_unlock_error = s.on_unlock_error;
    if (s.on_lost) o.on_lost = s.on_lost;
    if constexpr (requires { o.ttl; }) {
      if (s.ttl) o.ttl = *s.ttl;
      if (s.auto_renew) o.auto_renew = *s.auto_renew;
    } else {
      if (s.keepalive) o.keepalive = *s.keepalive;
    }
    return std::make_unique<object_adapter<Lock>>(std::make_unique<Lock>(db, name, o));
  };
}

// What the leased lock objects an owner holds (table_lock, multi_lock, fair_lock, rw_lock) can do.
lock_capabilities owned_lease_capabilities() {
  return {.object = true,
          .owner_keyed = true,
          .reentrant = true,
          .fenced = true,
          .leased = true,
          .loss_signal = true,
          .stoppable = true};
}

lock_kind table_kind() {
  lock_kind k;
  k.name = "table_lock";
  k.can = owned_lease_capabilities();
  add_object_entry_points<table_lock, table_lock_options>(k);
  k.shown_held = [](const database& observer, const std::string& name) {
    return first_field(sql(observer, "SELECT COUNT(*) FROM " + observer.table() + " WHERE resource = $1", {name})) !=
           "0";
  };
  k.recorded_level = [](const database& observer, const std::string& name) -> std::optional<std::int64_t> {
    const auto c = first_field(sql(observer, "SELECT count FROM " + observer.table() + " WHERE resource = $1", {name}));
    return c.empty() ? 0 : std::stoll(c);
  };
  k.force_release = [](const database& admin, const std::string& name) { sqllock::force_release(admin, name); };
  k.supported_on = [](dialect_kind) { return true; };
  return k;
}

// fair_lock and rw_lock: places in the wait queue, of kind 'F' or 'R'. The lock under test of
// kind "rw_lock" is its write mode; its read mode is the shared mode.
lock_kind queue_kind_of(std::string kind_name, char kind) {
  lock_kind k;
  k.name = std::move(kind_name);
  k.can = owned_lease_capabilities();
  k.can.shared = kind == 'R';
  if (kind == 'F')
    add_object_entry_points<fair_lock, fair_lock_options>(k);
  else
    add_object_entry_points<rw_lock, rw_lock_options>(k);
  const std::string tag(1, kind);
  k.shown_held = [tag](const database& observer, const std::string& name) {
    return first_field(sql(observer,
                           "SELECT COUNT(*) FROM " + observer.table() + "_queue WHERE resource = $1 AND kind = $2",
                           {name, tag})) != "0";
  };
  // The levels of the place at the head of the queue (the holder's).
  k.recorded_level = [tag](const database& observer, const std::string& name) -> std::optional<std::int64_t> {
    const auto c = first_field(sql(observer,
                                   "SELECT write_count + read_count FROM " + observer.table() +
                                       "_queue WHERE resource = $1 AND kind = $2 ORDER BY ticket",
                                   {name, tag}));
    return c.empty() ? 0 : std::stoll(c);
  };
  const auto queue = kind == 'F' ? queue_lock_kind::fair : queue_lock_kind::rw;
  k.force_release = [queue](const database& admin, const std::string& name) {
    force_release_queue_entries(admin, name, queue);
  };
  k.supported_on = [](dialect_kind) { return true; };
  return k;
}

// multi_lock: the lock under test is the set {name, companion_name(name)}, so that everything
// the contract does to `name` (refusals, another owner's table_lock, bad names) meets a set.
class multi_adapter final : public lock_object {
 public:
  multi_adapter(const database& db, const std::string& name, const multi_lock_options& o)
      : name_(name), lock_(db, {name, companion_name(name)}, o) {}
  const std::string& name() const override { return name_; }
  void lock() override { lock_.lock(); }
  bool try_lock() override { return lock_.try_lock(); }
  bool try_lock_for(std::chrono::milliseconds wait) override { return lock_.try_lock_for(wait); }
  bool try_lock_until(std::chrono::system_clock::time_point deadline) override {
    return lock_.try_lock_until(deadline);
  }
  bool lock(std::stop_token stop) override { return lock_.lock(std::move(stop)); }
  bool try_lock_for(std::chrono::milliseconds wait, std::stop_token stop) override {
    return lock_.try_lock_for(wait, std::move(stop));
  }
  void unlock() noexcept override { lock_.unlock(); }
  void release() override { lock_.release(); }
  bool holds() const override { return lock_.holds(); }
  std::stop_token lost_token() const override { return lock_.lost_token(); }
  std::optional<std::int64_t> count() const override { return lock_.count(); }
  std::int64_t fence() const override { return lock_.fence(name_); }
  lease_claim claim() const override { return lock_.claim(); }
  void lock_shared() override { throw std::logic_error("no shared mode: multi_lock"); }
  void release_shared() override { throw std::logic_error("no shared mode: multi_lock"); }

 private:
  std::string name_;
  multi_lock lock_;
};

multi_lock_options multi_options(const lock_settings& s) {
  multi_lock_options o;
  o.owner = s.owner;
  if (s.on_unlock_error) o.on_unlock_error = s.on_unlock_error;
  if (s.on_lost) o.on_lost = s.on_lost;
  if (s.ttl) o.ttl = *s.ttl;
  if (s.auto_renew) o.auto_renew = *s.auto_renew;
  return o;
}

lock_kind multi_kind() {
  lock_kind k;
  k.name = "multi_lock";
  k.can = owned_lease_capabilities();
  k.take = [](const database& db, const std::string& name, lock_wait wait) {
    multi_lock_options o;
    o.owner = next_owner();
    return hold_object(std::make_unique<multi_lock>(db, std::vector<std::string>{name, companion_name(name)}, o), wait);
  };
  k.run = [](const database& db, const std::string& name, lock_wait wait,
             const std::function<void(lock_section&)>& body) {
    multi_lock lock(db, {name, companion_name(name)});
    if (!attempt(lock, wait)) return false;
    std::lock_guard guard(lock, std::adopt_lock);
    pooled_section s(db);
    body(s);
    return true;
  };
  k.make = [](const database& db, const std::string& name, const lock_settings& s) -> std::unique_ptr<lock_object> {
    return std::make_unique<multi_adapter>(db, name, multi_options(s));
  };
  // Rows of the set: both or neither, never one (a partial set is a failure of its own).
  const auto rows_of = [](const database& observer, const std::string& name) {
    const auto counts = sql(observer, "SELECT resource, count FROM " + observer.table() + " WHERE resource IN ($1, $2)",
                            {name, companion_name(name)});
    EXPECT_NE(counts.rows.size(), 1u) << "a partial multi_lock set of '" << name << "' is held";
    return counts;
  };
  k.shown_held = [rows_of](const database& observer, const std::string& name) {
    return !rows_of(observer, name).rows.empty();
  };
  k.recorded_level = [rows_of](const database& observer, const std::string& name) -> std::optional<std::int64_t> {
    const auto r = rows_of(observer, name);
    if (r.rows.empty()) return 0;
    EXPECT_EQ(r.rows.front().at(1), r.rows.back().at(1)) << "every name of the set has the same level";
    return std::stoll(r.rows.front().at(1).value());
  };
  // One name of the set: the set is lost with it.
  k.force_release = [](const database& admin, const std::string& name) { sqllock::force_release(admin, name); };
  k.supported_on = [](dialect_kind) { return true; };
  return k;
}

// semaphore: the lock under test is the semaphore `name` with one permit. The adapter holds at
// most one permit; the permit, not a thread, is the owner (owner_keyed is false).
class semaphore_adapter final : public lock_object {
 public:
  semaphore_adapter(const database& db, const std::string& name, const semaphore_options& o)
      : name_(name), sem_(db, name, 1, o), on_unlock_error_(o.on_unlock_error) {}
  const std::string& name() const override { return name_; }
  void lock() override { permit_ = sem_.acquire(); }
  bool try_lock() override { return keep(sem_.try_acquire()); }
  bool try_lock_for(std::chrono::milliseconds wait) override { return keep(sem_.try_acquire_for(wait)); }
  // Any duration (hours::max() from lock_wait) reaches the library as written.
  template <class Rep, class Period>
  bool try_lock_for(std::chrono::duration<Rep, Period> wait) {
    return keep(sem_.try_acquire_for(wait));
  }
  bool try_lock_until(std::chrono::system_clock::time_point deadline) override {
    return keep(sem_.try_acquire_until(deadline));
  }
  bool lock(std::stop_token stop) override { return keep(sem_.acquire(std::move(stop))); }
  bool try_lock_for(std::chrono::milliseconds wait, std::stop_token stop) override {
    return keep(sem_.try_acquire_for(wait, std::move(stop)));
  }
  void unlock() noexcept override {
    try {
      release();
    } catch (const std::exception& e) {
      if (on_unlock_error_) on_unlock_error_(e);
    }
  }
  void release() override { permit_.release(); }
  bool holds() const override { return permit_.holds(); }
  std::stop_token lost_token() const override { return permit_.lost_token(); }
  std::optional<std::int64_t> count() const override { return std::nullopt; }
  std::int64_t fence() const override { return permit_.fence(); }
  lease_claim claim() const override { return permit_.claim(); }
  void lock_shared() override { throw std::logic_error("no shared mode: semaphore"); }
  void release_shared() override { throw std::logic_error("no shared mode: semaphore"); }

 private:
  bool keep(std::optional<permit> p) {
    if (!p) return false;
    permit_ = std::move(*p);
    return true;
  }
  std::string name_;
  semaphore sem_;
  unlock_error_callback on_unlock_error_;
  permit permit_;
};

semaphore_options semaphore_settings(const lock_settings& s) {
  semaphore_options o;
  if (s.on_unlock_error) o.on_unlock_error = s.on_unlock_error;
  if (s.on_lost) o.on_lost = s.on_lost;
  if (s.ttl) o.ttl = *s.ttl;
  if (s.auto_renew) o.auto_renew = *s.auto_renew;
  return o;
}

lock_kind semaphore_kind() {
  lock_kind k;
  k.name = "semaphore";
  k.can = {.object = true, .fenced = true, .leased = true, .loss_signal = true, .stoppable = true};
  k.take = [](const database& db, const std::string& name, lock_wait wait) {
    return hold_object(std::make_unique<semaphore_adapter>(db, name, semaphore_options{}), wait);
  };
  k.run = [](const database& db, const std::string& name, lock_wait wait,
             const std::function<void(lock_section&)>& body) {
    semaphore_adapter lock(db, name, {});
    if (!attempt(lock, wait)) return false;
    std::lock_guard guard(lock, std::adopt_lock);
    pooled_section s(db, lock.fence());
    body(s);
    return true;
  };
  k.make = [](const database& db, const std::string& name, const lock_settings& s) -> std::unique_ptr<lock_object> {
    return std::make_unique<semaphore_adapter>(db, name, semaphore_settings(s));
  };
  k.shown_held = [](const database& observer, const std::string& name) {
    return !find_permits(observer, name).empty();
  };
  k.recorded_level = [](const database& observer, const std::string& name) -> std::optional<std::int64_t> {
    return static_cast<std::int64_t>(find_permits(observer, name).size());
  };
  k.force_release = [](const database& admin, const std::string& name) { force_release_permits(admin, name); };
  k.supported_on = [](dialect_kind) { return true; };
  return k;
}

template <class Lock>
lock_kind session_kind(std::string kind) {
  lock_kind k;
  k.name = std::move(kind);
  constexpr bool pg = std::is_same_v<Lock, advisory_lock>;
  // clang-format off
  k.can = {.object = true, .owner_keyed = true, .reentrant = true, .shared = pg, .session_scoped = true,
           .loss_signal = true, .stoppable = true, .wait_overshoot = std::chrono::milliseconds(680),
           .freed_after_session_end = pg ? std::chrono::milliseconds(0) : std::chrono::milliseconds(2000)};
  // clang-format on
  add_object_entry_points<Lock, session_lock_options>(k);
  if constexpr (pg) {
    k.shown_held = [](const database& observer, const std::string& name) {
      const auto key = advisory_key::from_name(name);
      return pg_granted(observer, key, "ExclusiveLock") + pg_granted(observer, key, "ShareLock") > 0;
    };
    k.kill_holder_session = [](const database& admin, const std::string& name) {
      const auto key = advisory_key::from_name(name);
      const auto bits = static_cast<std::uint64_t>(key.value());
      const auto killed = first_field(
          sql(admin,
              "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' "
              "AND granted AND CAST(classid AS bigint) = CAST($1 AS bigint) "
              "AND CAST(objid AS bigint) = CAST($2 AS bigint) AND objsubid = 1",
              {static_cast<std::int64_t>(bits >> 32), static_cast<std::int64_t>(bits & 0xffffffffu)}));
      ASSERT_EQ(killed, "1") << "one session held '" << name << "'";
    };
    k.supported_on = [](dialect_kind d) { return d == dialect_kind::postgresql; };
    k.unsupported_says = [](dialect_kind d) { return std::vector<std::string>{"PostgreSQL", not_postgresql(d)}; };
    k.other_entry_points = [](const database& db) { EXPECT_THROW(advisory_lock(db, advisory_key(1)), not_supported); };
  } else {
    k.shown_held = [](const database& observer, const std::string& name) {
      return !first_field(sql(observer, "SELECT IS_USED_LOCK($1)", {named_lock_server_name(name)})).empty();
    };
    k.kill_holder_session = [](const database& admin, const std::string& name) {
      const auto id = first_field(sql(admin, "SELECT IS_USED_LOCK($1)", {named_lock_server_name(name)}));
      ASSERT_NE(id, "") << "no session holds '" << name << "'";
      sql(admin, "KILL " + id);
    };
    k.supported_on = [](dialect_kind d) { return d == dialect_kind::mysql; };
    k.unsupported_says = [](dialect_kind d) { return std::vector<std::string>{"MySQL", not_mysql(d)}; };
  }
  return k;
}

// A scoped kind's take(): its run() on a thread of its own, held until the holder is destroyed.
void add_scoped_take(lock_kind& k) {
  k.take = [run = k.run](const database& db, const std::string& name, lock_wait wait) {
    return scoped_holder::start([run, &db, name, wait](const std::function<void()>& fn) {
      return run(db, name, wait, [&](lock_section&) { fn(); });
    });
  };
}

lock_kind row_kind() {
  lock_kind k;
  k.name = "row_lock";
  k.can = {.transaction_scoped = true, .freed_after_holder_killed = std::chrono::milliseconds(2000)};
  k.run = [](const database& db, const std::string& name, lock_wait wait,
             const std::function<void(lock_section&)>& body) {
    const auto in_tx = [&](row_lock_tx& tx) {
      row_section s(tx);
      body(s);
    };
    return std::visit(
        [&](const auto& w) {
          using W = std::decay_t<decltype(w)>;
          if constexpr (std::is_same_v<W, std::monostate>)
            return try_with_row_lock(db, name, in_tx);
          else if constexpr (std::is_same_v<W, wait_forever>) {
            with_row_lock(db, name, in_tx);
            return true;
          } else
            return try_with_row_lock_for(db, name, w, in_tx);
        },
        wait);
  };
  add_scoped_take(k);
  // Held when another transaction cannot take it without waiting.
  k.shown_held = [](const database& observer, const std::string& name) {
    return !try_with_row_lock(observer, name, [](row_lock_tx&) {});
  };
  k.supported_on = [](dialect_kind d) { return d != dialect_kind::sqlite; };
  k.unsupported_says = [](dialect_kind) { return std::vector<std::string>{"table_lock"}; };
  k.other_entry_points = [](const database& db) { EXPECT_FALSE(supports_row_locks(db)); };
  return k;
}

// try_with_advisory_xact_lock_for takes any duration and saturates it (deadline.hpp), as the
// lock objects' try_lock_for do.
lock_kind advisory_xact_kind() {
  lock_kind k;
  k.name = "advisory_xact_lock";
  k.can = {.transaction_scoped = true, .freed_after_holder_killed = std::chrono::milliseconds(2000)};
  k.run = [](const database& db, const std::string& name, lock_wait wait,
             const std::function<void(lock_section&)>& body) {
    const auto fn = [&] {
      pooled_section s(db);
      body(s);
    };
    return std::visit(
        [&](const auto& w) {
          using W = std::decay_t<decltype(w)>;
          if constexpr (std::is_same_v<W, std::monostate>)
            return try_with_advisory_xact_lock_for(db, name, std::chrono::milliseconds::zero(), fn);
          else if constexpr (std::is_same_v<W, wait_forever>) {
            with_advisory_xact_lock(db, name, fn);
            return true;
          } else
            return try_with_advisory_xact_lock_for(db, name, w, fn);
        },
        wait);
  };
  add_scoped_take(k);
  k.shown_held = [](const database& observer, const std::string& name) {
    return pg_granted(observer, advisory_key::from_name(name), "ExclusiveLock") > 0;
  };
  k.supported_on = [](dialect_kind d) { return d == dialect_kind::postgresql; };
  k.unsupported_says = [](dialect_kind) { return std::vector<std::string>{}; };
  return k;
}

}  // namespace

detail::result pooled_section::exec(const std::string& statement, const std::vector<detail::value>& params) {
  return sql(db_, statement, params);
}

std::string to_string(release_result r) {
  switch (r) {
    case release_result::ok: return "ok";
    case release_result::not_held: return "notheld";
    case release_result::lost: return "lost";
    case release_result::error: return "err";
    case release_result::unknown: return "unk";
  }
  return "?";
}

std::string companion_name(const std::string& name) {
  constexpr std::string_view tail = "/second";
  if (name.size() + tail.size() <= 255) return name + std::string(tail);
  return "second/" + detail::sha256_hex(name);  // a name at the limit: still distinct, still valid
}

std::unique_ptr<lock_holder> make_holder(const lock_kind& k, const database& db, const std::string& lock,
                                         const lock_settings& s) {
  if (k.can.object) return std::make_unique<object_lock_holder>(db, k.make(db, lock, s), k.can);
  return std::make_unique<scoped_lock_holder>(db, lock, k.run);
}

lock_kind lock_kind_named(const std::string& name) {
  for (auto& k : all_lock_kinds())
    if (k.name == name) return std::move(k);
  throw std::invalid_argument("no lock kind '" + name + "': use one of all_lock_kinds()' names, e.g. table_lock");
}

std::vector<lock_kind> lock_kinds_of(dialect_kind dialect) {
  std::vector<lock_kind> kinds{table_kind(), multi_kind(), semaphore_kind(), queue_kind_of("fair_lock", 'F'),
                               queue_kind_of("rw_lock", 'R')};
  if (dialect == dialect_kind::postgresql) {
    kinds.push_back(session_kind<advisory_lock>("advisory_lock"));
    kinds.push_back(advisory_xact_kind());
  }
  if (dialect == dialect_kind::mysql) kinds.push_back(session_kind<named_lock>("named_lock"));
  if (dialect != dialect_kind::sqlite) kinds.push_back(row_kind());
  return kinds;
}

std::vector<lock_kind> all_lock_kinds() {
  // clang-format 14 would put each kind on a line of its own.
  // clang-format off
  return {table_kind(), multi_kind(), semaphore_kind(), queue_kind_of("fair_lock", 'F'), queue_kind_of("rw_lock", 'R'),
          session_kind<advisory_lock>("advisory_lock"), advisory_xact_kind(),
          session_kind<named_lock>("named_lock"), row_kind()};
  // clang-format on
}

lock_kind session_lock_kind(dialect_kind dialect) {
  for (auto& k : lock_kinds_of(dialect))
    if (k.can.session_scoped) return std::move(k);
  throw std::invalid_argument("no session lock on this dialect (SQLite)");
}

std::vector<target> session_lock_targets() {
  std::vector<target> out;
  for (const auto dialect : {dialect_kind::postgresql, dialect_kind::mysql})
    for (auto& t : all_targets())
      if (t.dialect == dialect) out.push_back(t);
  return out;
}

std::vector<lock_kind> lock_kinds_for(const target& t) {
  auto kinds = lock_kinds_of(t.dialect);
  if (t.transaction_pooler) std::erase_if(kinds, [](const lock_kind& k) { return k.can.session_scoped; });
  if (t.dialect == dialect_kind::mysql)
    for (auto& k : kinds)
      if (k.name == "row_lock") k.can.wait_granularity = std::chrono::seconds(1);
  return kinds;
}

std::vector<lock_case> lock_cases(const std::vector<target>& targets,
                                  const std::function<bool(const lock_kind&)>& keep) {
  std::vector<lock_case> out;
  for (const auto& t : targets)
    for (auto& k : lock_kinds_for(t))
      if (!keep || keep(k)) out.push_back({std::move(k), t});
  return out;
}

std::vector<lock_case> unsupported_lock_cases(const std::vector<target>& targets) {
  std::vector<lock_case> out;
  for (const auto& t : targets)
    for (auto& k : all_lock_kinds())
      if (!k.supported_on(t.dialect)) out.push_back({std::move(k), t});
  return out;
}

std::string lock_case_name(const lock_case& c) {
  std::string out = c.kind.name;
  out += '_';
  out += c.where.name;
  return out;
}

}  // namespace sqllock::test
