#include "support/lockers.hpp"

#include <atomic>
#include <stdexcept>

#include "sqllock/error.hpp"

#include "sqllock/advisory_lock.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/table_lock.hpp"

namespace sqllock::bench {
namespace {

std::atomic<std::int64_t> retried_releases{0};

// table_lock, advisory_lock and named_lock share lock() / release().
template <class Lock>
class lockable_locker final : public locker {
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

const std::vector<lock_kind>& lock_kinds() {
  using d = dialect_kind;
  static const std::vector<lock_kind> kinds = {
      {"table", {d::postgresql, d::mysql, d::sqlite}, true, make_lockable<table_lock, table_lock_options>},
      {"advisory", {d::postgresql}, true, make_lockable<advisory_lock, advisory_lock_options>},
      {"named", {d::mysql}, true, make_lockable<named_lock, named_lock_options>},
      {"row", {d::postgresql, d::mysql}, false,
       [](const database& db, const std::string& key, const std::string&) -> std::unique_ptr<locker> {
         return std::make_unique<row_locker>(db, key);
       }},
  };
  return kinds;
}

}  // namespace sqllock::bench
