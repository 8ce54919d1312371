#include "support/lock_kinds.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "sqllock/advisory_lock.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/table_lock.hpp"

namespace sqllock::test {
namespace {

// A fresh explicit owner key per take: the holder may then be destroyed on any thread (a
// thread-owned lock released from another thread would be not_held), and two takes are always
// two owners, even on one handle.
std::string next_owner() {
  static std::atomic<int> n{0};
  return "bad-input-owner-" + std::to_string(n++);
}

// A lock object held until the holder is destroyed (its destructor releases it).
template <class Lock>
class object_holder final : public held_lock {
 public:
  explicit object_holder(std::unique_ptr<Lock> lock) : lock_(std::move(lock)) {}

 private:
  std::unique_ptr<Lock> lock_;
};

// try_lock, or try_lock_for with the wait as given.
template <class Lock>
std::unique_ptr<held_lock> hold_object(std::unique_ptr<Lock> lock, const lock_wait& wait) {
  const bool got = std::visit(
      [&](const auto& w) {
        if constexpr (std::is_same_v<std::decay_t<decltype(w)>, std::monostate>)
          return lock->try_lock();
        else
          return lock->try_lock_for(w);
      },
      wait);
  if (!got) return nullptr;
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

lock_kind table_kind() {
  return {"table_lock", [](const database& db, const std::string& name, lock_wait wait) {
            table_lock_options o;
            o.owner = next_owner();
            return hold_object(std::make_unique<table_lock>(db, name, o), wait);
          }};
}

template <class Lock>
lock_kind session_kind(std::string kind) {
  return {std::move(kind), [](const database& db, const std::string& name, lock_wait wait) {
            session_lock_options o;
            o.owner = next_owner();
            return hold_object(std::make_unique<Lock>(db, name, o), wait);
          }};
}

lock_kind row_kind() {
  return {"row_lock", [](const database& db, const std::string& name, lock_wait wait) {
            return scoped_holder::start([&db, name, wait](const std::function<void()>& fn) {
              const auto body = [&](row_lock_tx&) { fn(); };
              return std::visit(
                  [&](const auto& w) {
                    if constexpr (std::is_same_v<std::decay_t<decltype(w)>, std::monostate>)
                      return try_with_row_lock(db, name, body);
                    else
                      return try_with_row_lock_for(db, name, w, body);
                  },
                  wait);
            });
          }};
}

// try_with_advisory_xact_lock takes std::chrono::milliseconds: a wait given in hours stands for
// the longest (or most negative) wait of that type (converting hours::max() would overflow).
lock_kind advisory_xact_kind() {
  return {"advisory_xact_lock", [](const database& db, const std::string& name, lock_wait wait) {
            return scoped_holder::start([&db, name, wait](const std::function<void()>& fn) {
              const auto body = [&] { fn(); };
              return std::visit(
                  [&](const auto& w) {
                    if constexpr (std::is_same_v<std::decay_t<decltype(w)>, std::monostate>)
                      return try_with_advisory_xact_lock(db, name, std::chrono::milliseconds::zero(), body);
                    else if constexpr (std::is_same_v<std::decay_t<decltype(w)>, std::chrono::hours>)
                      return try_with_advisory_xact_lock(
                          db, name, w < w.zero() ? std::chrono::milliseconds::min() : std::chrono::milliseconds::max(),
                          body);
                    else
                      return try_with_advisory_xact_lock(db, name, w, body);
                  },
                  wait);
            });
          }};
}

}  // namespace

std::vector<lock_kind> lock_kinds_of(dialect_kind dialect) {
  std::vector<lock_kind> kinds{table_kind()};
  if (dialect == dialect_kind::postgresql) {
    kinds.push_back(session_kind<advisory_lock>("advisory_lock"));
    kinds.push_back(advisory_xact_kind());
  }
  if (dialect == dialect_kind::mysql) kinds.push_back(session_kind<named_lock>("named_lock"));
  if (dialect != dialect_kind::sqlite) kinds.push_back(row_kind());
  return kinds;
}

}  // namespace sqllock::test
