#include "run_kinds.hpp"

#include <iostream>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "cli.hpp"
#include "format.hpp"
#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/multi_lock.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/rw_lock.hpp"
#include "sqllock/semaphore.hpp"
#include "sqllock/statement_deadline.hpp"
#include "sqllock/table_lock.hpp"

namespace sqllock::cli {

namespace {

// A lock held from try_lock() until release(): table_lock, multi_lock, advisory_lock, named_lock,
// a semaphore's permit, a place in a wait queue. They share try_lock / lost_token / release /
// unlock, so one template serves them all.
template <class Lock>
class held_run_lock : public run_lock {
 public:
  // `label` names the lock in messages (run_lock_label); `release_hint` tells the user what
  // happens to the lock when releasing it fails.
  template <class... Args>
  held_run_lock(std::string label, const char* release_hint, Args&&... args)
      : lock_(std::forward<Args>(args)...), label_(std::move(label)), release_hint_(release_hint) {}

  std::optional<int> try_run(const locked_body& body, std::chrono::steady_clock::time_point bound) override {
    {
      const statement_deadline attempt_bound(bound);
      if (!lock_.try_lock()) return std::nullopt;
    }
    return run_held(body);
  }

  int run_held(const locked_body& body) override {
    const std::stop_token lost = lock_.lost_token();
    int code = 0;
    try {
      code = body(lost);
    } catch (...) {
      lock_.unlock();
      throw;
    }
    if (lost.stop_requested() || !lock_.holds()) {
      try {
        lock_.release();  // throws not_held, and forgets the lost hold without a message
      } catch (const error&) {
      }
      return code;  // body has reported the loss (a lease past its local deadline is lost too)
    }
    try {
      lock_.release();
    } catch (const error& e) {
      // The command finished under the lock; a failed release only delays the next holder.
      std::cerr << "sqllock: releasing " << label_ << " failed: " << e.what() << " (" << release_hint_ << ")\n";
    }
    return code;
  }

  bool holds() const noexcept override { return lock_.holds(); }

  std::vector<std::int64_t> fences() const override {
    if constexpr (requires { lock_.fences(); }) {
      return lock_.fences();
    } else if constexpr (requires { lock_.fence(); }) {
      return {lock_.fence()};
    } else {
      return {};  // advisory and named locks have no fencing token
    }
  }

  std::optional<std::int64_t> slot() const override {
    if constexpr (requires { lock_.slot(); }) {
      return lock_.slot();
    } else {
      return std::nullopt;
    }
  }

 protected:
  Lock lock_;

 private:
  std::string label_;
  const char* release_hint_;
};

// A lock whose waiters keep a place in its wait queue (queue_place): it waits in the library.
template <class Lock>
class queued_run_lock final : public held_run_lock<Lock> {
 public:
  using held_run_lock<Lock>::held_run_lock;
  bool queues() const noexcept override { return true; }
  bool wait_turn(std::chrono::steady_clock::time_point deadline, std::stop_token stop) override {
    return this->lock_.wait_turn(deadline, std::move(stop));
  }
};

// One permit of a semaphore, with the lock interface held_run_lock uses.
class semaphore_permit {
 public:
  semaphore_permit(const database& db, const std::string& name, std::int64_t permits, semaphore_options o)
      : sem_(db, name, permits, std::move(o)) {}
  bool try_lock() {
    auto p = sem_.try_acquire();
    if (!p) return false;
    permit_ = std::move(*p);
    return true;
  }
  std::stop_token lost_token() const { return permit_.lost_token(); }
  bool holds() const noexcept { return permit_.holds(); }
  std::int64_t fence() const { return permit_.fence(); }
  std::int64_t slot() const { return permit_.slot(); }
  void release() { permit_.release(); }
  void unlock() noexcept { permit_ = permit(); }  // the destructor's release reports its own errors

 private:
  semaphore sem_;
  permit permit_;
};

// A fair_lock, or an rw_lock in one mode, with the lock interface held_run_lock uses, and a wait
// for its turn that keeps its place in the queue. The owner is the object's explicit key, not the
// calling thread, so that one thread may wait and another run the command and release.
template <class Lock>
class queue_place {
 public:
  template <class Options>
  queue_place(const database& db, const std::string& name, bool shared, Options o)
      : lock_(db, name, with_owner(std::move(o))), shared_(shared) {}

  bool try_lock() {
    if constexpr (has_modes) {
      if (shared_) return lock_.try_lock_shared();
    }
    return lock_.try_lock();
  }
  // Waits until `deadline` (time_point::max(): as long as it takes) or a stop on `stop`; false
  // when either came first (the place is given back).
  bool wait_turn(std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
    const bool forever = deadline == std::chrono::steady_clock::time_point::max();
    if constexpr (has_modes) {
      if (shared_ && forever) return lock_.lock_shared(std::move(stop));
      if (shared_) return lock_.try_lock_shared_until(deadline, std::move(stop));
    }
    if (forever) return lock_.lock(std::move(stop));
    return lock_.try_lock_until(deadline, std::move(stop));
  }
  std::stop_token lost_token() const { return lock_.lost_token(); }
  bool holds() const noexcept {
    if constexpr (has_modes) {
      if (shared_) return lock_.holds_shared();
    }
    return lock_.holds();
  }
  std::int64_t fence() const { return lock_.fence(); }
  void release() {
    if constexpr (has_modes) {
      if (shared_) return lock_.release_shared();
    }
    lock_.release();
  }
  void unlock() noexcept {
    if constexpr (has_modes) {
      if (shared_) return lock_.unlock_shared();
    }
    lock_.unlock();
  }

 private:
  static constexpr bool has_modes = std::is_same_v<Lock, rw_lock>;
  template <class Options>
  static Options with_owner(Options o) {
    o.owner = "sqllock-run";
    return o;
  }

  Lock lock_;
  bool shared_;
};

// The multi_lock of several --lock names, with the lock interface held_run_lock uses, whose
// fences() follow the order the names were given in (multi_lock::fences() sorts them).
class ordered_multi_lock {
 public:
  ordered_multi_lock(const database& db, std::vector<std::string> names, multi_lock_options o)
      : lock_(db, names, std::move(o)), given_(std::move(names)) {}
  bool try_lock() { return lock_.try_lock(); }
  std::stop_token lost_token() const { return lock_.lost_token(); }
  bool holds() const noexcept { return lock_.holds(); }
  std::vector<std::int64_t> fences() const {
    std::vector<std::int64_t> out;
    for (const auto& name : given_) out.push_back(lock_.fence(name));
    return out;
  }
  void release() { lock_.release(); }
  void unlock() noexcept { lock_.unlock(); }

 private:
  multi_lock lock_;
  std::vector<std::string> given_;
};

// A row lock exists only while with_row_lock's function runs, so body runs inside it. There is no
// loss signal: a dead connection shows only when the transaction ends.
class row_run_lock final : public run_lock {
 public:
  row_run_lock(const database& db, std::string name) : db_(db), name_(std::move(name)) {}

  bool holds() const noexcept override { return true; }  // no lease, no loss signal

  std::optional<int> try_run(const locked_body& body, std::chrono::steady_clock::time_point) override {
    std::optional<int> code;
    try {
      if (!try_with_row_lock(db_, name_, [&](row_lock_tx&) { code = body(std::stop_token{}); })) return std::nullopt;
    } catch (const error& e) {
      if (!code) throw;  // before body ran: the lock was not taken
      // Ending the transaction failed after the command ran: its connection may have broken
      // while the command ran, and the lock with it.
      std::cerr << "sqllock: ending the transaction of row lock '" << printable(name_)
                << "' failed after the command ran: " << e.what() << " (the lock may have ended early)\n";
      return exit_lock_lost;
    }
    return code;
  }

 private:
  const database& db_;
  std::string name_;
};

session_lock_options session_options(const run_lock_settings& s) {
  session_lock_options o;
  o.on_lost = s.on_lost;
  return o;
}

// Throws not_supported, naming what to use instead, unless db's dialect is `needed`.
void require_dialect(const database& db, dialect_kind needed, std::string_view kind, std::string_view needs,
                     std::string_view instead) {
  if (db.dialect() != needed)
    throw not_supported("--kind " + std::string(kind) + " needs " + std::string(needs) + "; this database is " +
                        std::string(to_string(db.dialect())) + " (use " + std::string(instead) + ")");
}

// The options of a leased kind, as `sqllock run` sets them: the ttl, renewed in the background.
template <class Options>
Options leased_options(const run_lock_settings& s) {
  Options o;
  o.ttl = s.ttl;
  o.auto_renew = true;
  o.on_lost = s.on_lost;
  return o;
}

}  // namespace

bool run_lock::wait_turn(std::chrono::steady_clock::time_point, std::stop_token) {
  throw std::logic_error("wait_turn() on a lock kind that does not queue");
}

int run_lock::run_held(const locked_body&) { throw std::logic_error("run_held() on a lock kind without it"); }

std::string run_lock_label(const run_lock_settings& s) {
  if (s.more_names.empty()) return "lock '" + printable(s.name) + "'";
  std::string out = "locks '" + printable(s.name) + "'";
  for (std::size_t i = 0; i < s.more_names.size(); ++i)
    out.append(i + 1 == s.more_names.size() ? " and '" : ", '").append(printable(s.more_names[i])).append("'");
  return out;
}

run_kind parse_run_kind(std::string_view text) {
  if (text == "table") return run_kind::table;
  if (text == "row") return run_kind::row;
  if (text == "advisory") return run_kind::advisory;
  if (text == "named") return run_kind::named;
  if (text == "semaphore") return run_kind::semaphore;
  if (text == "fair") return run_kind::fair;
  if (text == "rw") return run_kind::rw;
  throw usage_error{"unknown --kind '" + std::string(text) +
                    "': use table, semaphore, fair, rw, row, advisory or named"};
}

std::unique_ptr<run_lock> make_run_lock(run_kind kind, const database& db, const run_lock_settings& s) {
  if (!s.more_names.empty()) {
    // Several --lock: one multi_lock, all or none. The other kinds have no such form.
    if (kind != run_kind::table)
      throw usage_error{"several --lock names need --kind table (a multi_lock of table locks); other kinds take one"};
    std::vector<std::string> names{s.name};
    names.insert(names.end(), s.more_names.begin(), s.more_names.end());
    return std::make_unique<held_run_lock<ordered_multi_lock>>(run_lock_label(s), "the leases expire on their own", db,
                                                               std::move(names), leased_options<multi_lock_options>(s));
  }
  switch (kind) {
    case run_kind::table:
      return std::make_unique<held_run_lock<table_lock>>(run_lock_label(s), "the lease expires on its own", db, s.name,
                                                         leased_options<table_lock_options>(s));
    case run_kind::semaphore:
      return std::make_unique<held_run_lock<semaphore_permit>>(run_lock_label(s), "the lease expires on its own", db,
                                                               s.name, s.permits, leased_options<semaphore_options>(s));
    case run_kind::fair:
      return std::make_unique<queued_run_lock<queue_place<fair_lock>>>(run_lock_label(s),
                                                                       "its place expires with its lease", db, s.name,
                                                                       false, leased_options<fair_lock_options>(s));
    case run_kind::rw:
      return std::make_unique<queued_run_lock<queue_place<rw_lock>>>(run_lock_label(s),
                                                                     "its place expires with its lease", db, s.name,
                                                                     s.shared, leased_options<rw_lock_options>(s));
    case run_kind::advisory:
      require_dialect(db, dialect_kind::postgresql, "advisory", "PostgreSQL",
                      "--kind named on MySQL/MariaDB, table on SQLite");
      return std::make_unique<held_run_lock<advisory_lock>>(
          run_lock_label(s), "the server frees it when the session ends", db, s.name, session_options(s));
    case run_kind::named:
      require_dialect(db, dialect_kind::mysql, "named", "MySQL/MariaDB",
                      "--kind advisory on PostgreSQL, table on SQLite");
      return std::make_unique<held_run_lock<named_lock>>(run_lock_label(s), "the server frees it when the session ends",
                                                         db, s.name, session_options(s));
    case run_kind::row:
      if (!supports_row_locks(db))
        throw not_supported("--kind row needs PostgreSQL or MySQL/MariaDB; this database is " +
                            std::string(to_string(db.dialect())) + " (use --kind table)");
      return std::make_unique<row_run_lock>(db, s.name);
  }
  throw usage_error{"unknown --kind"};
}

}  // namespace sqllock::cli
