#include "fault/queue_holder.hpp"

#include <unistd.h>

#include <random>
#include <optional>
#include <stop_token>
#include <type_traits>

#include "fault/schema.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/rw_lock.hpp"

namespace sqllock::fault {
namespace {

template <class Lock, class Options>
class queue_holder final : public test::lock_holder {
 public:
  static constexpr bool kShared = std::is_same_v<Lock, rw_lock>;

  queue_holder(const run_config& cfg, const database& db, const std::string& name, int thread)
      : db_(db), lock_(db, name, options(cfg, thread)),
        rng_(std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 16) ^
             static_cast<std::uint64_t>(thread)) {}

  std::optional<test::release_result> hold(std::chrono::milliseconds wait, const test::hold_hooks& hooks) override {
    // rw: the write lock one time in three.
    bool write = !kShared || std::uniform_int_distribution<int>(0, 2)(rng_) == 0;
    if (!(write ? lock_.try_lock_for(wait) : try_lock_shared_for(wait))) return std::nullopt;
    std::optional<test::lost_callback> on_lost;  // through the release too: a loss may come while it retries
    {
      queue_section s(
          db_, lock_.fence(), write, [this, write] { return reenter(write); }, [this] { return lock_.claim(); });
      on_lost.emplace(lock_.lost_token(), [&hooks, fence = s.fence()] { hooks.on_lost(fence); });
      hooks.body(s);
      hooks.before_release();
    }
    return test::release_retrying([&] {
      if constexpr (kShared) {
        if (!write) return lock_.release_shared();
      }
      lock_.release();
    });
  }

 private:
  static Options options(const run_config& cfg, int thread) {
    Options o;
    o.ttl = cfg.lease;
    o.owner = queue_owner_key(thread);
    o.on_unlock_error = [](const std::exception&) {};
    return o;
  }

  bool try_lock_shared_for(std::chrono::milliseconds wait) {
    if constexpr (kShared) return lock_.try_lock_shared_for(wait);
    return false;
  }

  // Takes one more level of the hold's mode, reads the fence it reports and gives the level back.
  std::optional<std::int64_t> reenter(bool write) {
    if constexpr (kShared) {
      if (!write) {
        if (!lock_.try_lock_shared()) return -2;
        const std::int64_t inner = lock_.fence();
        lock_.unlock_shared();
        return inner;
      }
    }
    if (!lock_.try_lock()) return -2;
    const std::int64_t inner = lock_.fence();
    lock_.unlock();
    return inner;
  }

  const database& db_;
  Lock lock_;
  std::mt19937_64 rng_;
};

}  // namespace

std::string queue_owner_key(int thread) {
  return std::string("q").append(std::to_string(::getpid())).append(".").append(std::to_string(thread));
}

std::vector<std::unique_ptr<test::lock_holder>> queue_holders(const run_config& cfg, const database& db, int thread) {
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (int i = 0; i < cfg.resources; ++i) {
    if (cfg.kind == lock_kind::rw)
      out.push_back(std::make_unique<queue_holder<rw_lock, rw_lock_options>>(cfg, db, resource_name(i), thread));
    else
      out.push_back(std::make_unique<queue_holder<fair_lock, fair_lock_options>>(cfg, db, resource_name(i), thread));
  }
  return out;
}

}  // namespace sqllock::fault
