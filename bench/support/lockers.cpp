#include "support/lockers.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>

#include "sqllock/error.hpp"

#include "sqllock/advisory_lock.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/multi_lock.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/rw_lock.hpp"
#include "sqllock/semaphore.hpp"
#include "sqllock/table_lock.hpp"

namespace sqllock::bench {
namespace {

std::atomic<std::int64_t> retried_releases{0};

// table_lock, advisory_lock, named_lock, fair_lock, rw_lock (write levels), rw_reader (its read
// levels) and multi_lock share lock() / unlock() / release().
template <class Lock>
class lockable_locker : public locker {
 public:
  template <class... Args>
  explicit lockable_locker(Args&&... args) : lock_(std::forward<Args>(args)...) {}
  void run_locked(const std::function<void()>& body) override {
    lock_.lock();
    try {
      body();
    } catch (...) {
      lock_.unlock();
      throw;
    }
    for (int attempt = 0;; ++attempt) {
      try {
        lock_.release();
        return;
      } catch (const backend_error&) {
        if (attempt == 3) throw;
        ++retried_releases;
      }
    }
  }
  void hold() override { lock_.lock(); }
  void give_back() override { lock_.release(); }

 private:
  Lock lock_;
};

// An rw_lock's read levels under the names lockable_locker calls.
class rw_reader {
 public:
  rw_reader(const database& db, const std::string& key) : lock_(db, key) {}
  void lock() { lock_.lock_shared(); }
  void unlock() noexcept { lock_.unlock_shared(); }
  void release() { lock_.release_shared(); }

 private:
  rw_lock lock_;
};

class row_locker final : public locker {
 public:
  row_locker(const database& db, std::string key) : db_(db), key_(std::move(key)) {}
  void run_locked(const std::function<void()>& body) override {
    with_row_lock(db_, key_, [&](row_lock_tx&) { body(); });
  }
  void hold() override { throw std::logic_error("row locks are held only inside run_locked"); }
  void give_back() override { hold(); }

 private:
  database db_;
  std::string key_;
};

class semaphore_locker final : public locker {
 public:
  semaphore_locker(const database& db, const std::string& name, std::int64_t permits) : sem_(db, name, permits) {}
  void run_locked(const std::function<void()>& body) override {
    auto p = sem_.acquire();
    body();  // if it throws, the permit's destructor gives it back
    p.release();
  }
  void hold() override { throw std::logic_error("the semaphore locker holds permits only inside run_locked"); }
  void give_back() override { hold(); }

 private:
  semaphore sem_;
};

std::vector<std::string> numbered(const std::string& key, std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(key + "-" + std::to_string(i));
  std::sort(out.begin(), out.end());  // the order multi_lock locks them in
  return out;
}

// The multi_lock of the n names numbered(key, n).
class multi_locker final : public lockable_locker<multi_lock> {
 public:
  multi_locker(const database& db, const std::string& key, std::size_t n) : lockable_locker(db, numbered(key, n)) {}
};

class table_seq_locker final : public locker {
 public:
  table_seq_locker(const database& db, const std::string& key, std::size_t n) {
    for (const auto& name : numbered(key, n)) locks_.push_back(std::make_unique<table_lock>(db, name));
  }
  void run_locked(const std::function<void()>& body) override {
    hold();
    try {
      body();
    } catch (...) {
      for (auto it = locks_.rbegin(); it != locks_.rend(); ++it) (*it)->unlock();
      throw;
    }
    give_back();
  }
  void hold() override {
    for (std::size_t i = 0; i < locks_.size(); ++i) {
      try {
        locks_[i]->lock();
      } catch (...) {
        while (i-- > 0) locks_[i]->unlock();
        throw;
      }
    }
  }
  void give_back() override {
    for (auto it = locks_.rbegin(); it != locks_.rend(); ++it) (*it)->release();
  }

 private:
  std::vector<std::unique_ptr<table_lock>> locks_;
};

// Kinds made on demand, one per name, kept for the program's life (cases hold references).
const lock_kind& cached_kind(const std::string& name, const std::function<lock_kind()>& make) {
  static std::mutex mu;
  static std::map<std::string, lock_kind> kinds;
  std::lock_guard lock(mu);
  auto it = kinds.find(name);
  if (it == kinds.end()) it = kinds.emplace(name, make()).first;
  return it->second;
}

template <class Lock, class Options>
std::unique_ptr<locker> make_lockable(const database& db, const std::string& key, const std::string& owner) {
  Options options;
  options.owner = owner;
  return std::make_unique<lockable_locker<Lock>>(db, key, options);
}

}  // namespace

std::int64_t release_retries() { return retried_releases; }

std::string short_name(dialect_kind d) {
  switch (d) {
    case dialect_kind::postgresql: return "pg";
    case dialect_kind::mysql: return "mariadb";
    case dialect_kind::sqlite: break;
  }
  return "sqlite";
}

// A kind on every database whose lockers are `Locker(db, key, arg)`, made once per name.
template <class Locker, class Arg>
const lock_kind& every_database_kind(const std::string& name, Arg arg) {
  return cached_kind(name, [&] {
    using d = dialect_kind;
    return lock_kind{name,
                     {d::postgresql, d::mysql, d::sqlite},
                     false,
                     [arg](const database& db, const std::string& key, const std::string&) -> std::unique_ptr<locker> {
                       return std::make_unique<Locker>(db, key, arg);
                     }};
  });
}

const lock_kind& semaphore_kind(std::int64_t permits) {
  return every_database_kind<semaphore_locker>(permits == 4 ? "semaphore" : "semaphore_" + std::to_string(permits),
                                               permits);
}

const lock_kind& multi_kind(std::size_t names) {
  return every_database_kind<multi_locker>("multi" + std::to_string(names), names);
}

const lock_kind& table_seq_kind(std::size_t names) {
  return every_database_kind<table_seq_locker>("table" + std::to_string(names), names);
}

const lock_kind& rw_shared_kind() {
  return cached_kind("rw_shared", [] {
    using d = dialect_kind;
    return lock_kind{"rw_shared",
                     {d::postgresql, d::mysql, d::sqlite},
                     true,
                     [](const database& db, const std::string& key, const std::string&) -> std::unique_ptr<locker> {
                       return std::make_unique<lockable_locker<rw_reader>>(db, key);
                     }};
  });
}

const std::vector<lock_kind>& lock_kinds() {
  using d = dialect_kind;
  static const std::vector<lock_kind> kinds = {
      {"table", {d::postgresql, d::mysql, d::sqlite}, true, make_lockable<table_lock, table_lock_options>},
      {"advisory", {d::postgresql}, true, make_lockable<advisory_lock, advisory_lock_options>},
      {"named", {d::mysql}, true, make_lockable<named_lock, named_lock_options>},
      {"row",
       {d::postgresql, d::mysql},
       false,
       [](const database& db, const std::string& key, const std::string&) -> std::unique_ptr<locker> {
         return std::make_unique<row_locker>(db, key);
       }},
      {"fair", {d::postgresql, d::mysql, d::sqlite}, true, make_lockable<fair_lock, fair_lock_options>},
      {"rw", {d::postgresql, d::mysql, d::sqlite}, true, make_lockable<rw_lock, rw_lock_options>},
  };
  return kinds;
}

}  // namespace sqllock::bench
