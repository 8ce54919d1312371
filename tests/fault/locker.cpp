#include "fault/locker.hpp"

#include <stop_token>
#include <thread>

#include "fault/rogue_locker.hpp"
#include "fault/schema.hpp"
#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/table_lock.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {

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

namespace {

// A section whose statements run on the process's pool, outside the lock.
template <class Lock>
class pooled_section : public section {
 public:
  pooled_section(const database& db, Lock& lock, std::int64_t fence) : db_(db), lock_(lock), fence_(fence) {}
  std::int64_t fence() const override { return fence_; }
  detail::result exec(const std::string& statement, const std::vector<detail::value>& params) override {
    return test::sql(db_, statement, params);
  }
  bool transactional() const override { return false; }
  std::optional<std::int64_t> reenter() override {
    if (!lock_.try_lock()) return -2;
    std::int64_t inner = -1;
    if constexpr (std::is_same_v<Lock, table_lock>) inner = lock_.fence();
    lock_.unlock();
    return inner;
  }

 private:
  const database& db_;
  Lock& lock_;
  std::int64_t fence_;
};

// Releases, retrying a release that failed for lack of a connection, so that a thread never
// carries a level into its next acquisition; reports the first attempt's outcome.
template <class Lock>
release_result release_retrying(Lock& lock) {
  std::optional<release_result> first;
  for (int attempt = 0; attempt < 50; ++attempt) {
    try {
      lock.release();
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

// table_lock, advisory_lock and named_lock: one object per resource for this thread.
template <class Lock>
class object_locker : public locker {
 public:
  template <class Options>
  object_locker(const database& db, int resources, const Options& options) : db_(db) {
    for (int i = 0; i < resources; ++i) locks_.push_back(std::make_unique<Lock>(db, resource_name(i), options));
  }

  std::optional<release_result> hold(int i, std::chrono::milliseconds timeout, const hold_hooks& hooks) override {
    Lock& lock = *locks_.at(static_cast<std::size_t>(i));
    if (!lock.try_lock_for(timeout)) return std::nullopt;
    std::int64_t fence = -1;
    if constexpr (std::is_same_v<Lock, table_lock>) fence = lock.fence();
    {
      std::stop_callback on_lost(lock.lost_token(), [&] { hooks.on_lost(fence); });
      pooled_section<Lock> s(db_, lock, fence);
      hooks.body(s);
      hooks.before_release();
    }
    return release_retrying(lock);
  }

 protected:
  const database& db_;
  std::vector<std::unique_ptr<Lock>> locks_;
};

// The negative control "release without the owner/fence match": a peer that releases with
// DELETE … WHERE resource = ? and only then lets sqllock tidy up its own state. It believes it
// released when its DELETE removed a row — perhaps another holder's.
class unsafe_release_locker : public object_locker<table_lock> {
 public:
  using object_locker::object_locker;
  std::optional<release_result> hold(int i, std::chrono::milliseconds timeout, const hold_hooks& hooks) override {
    release_result mine = release_result::error;
    hold_hooks h = hooks;
    h.before_release = [&, i] {
      hooks.before_release();
      try {
        const auto r = test::sql(db_, "DELETE FROM distributed_lock WHERE resource = $1", {resource_name(i)});
        mine = r.affected > 0 ? release_result::ok : release_result::not_held;
      } catch (const error&) {
      }
    };
    const auto r = object_locker::hold(i, timeout, h);
    if (r) return mine;
    return r;
  }
};

// A section inside with_row_lock's transaction.
class row_section : public section {
 public:
  explicit row_section(row_lock_tx& tx) : tx_(tx) {}
  std::int64_t fence() const override { return -1; }
  detail::result exec(const std::string& statement, const std::vector<detail::value>& params) override {
    std::vector<sql_value> p;
    for (const auto& v : params) std::visit([&](const auto& x) { p.emplace_back(x); }, v);
    const auto r = tx_.exec(statement, std::span<const sql_value>(p));
    detail::result out;
    out.rows = r.rows;
    out.affected = r.affected;
    return out;
  }
  bool transactional() const override { return true; }
  std::optional<std::int64_t> reenter() override { return std::nullopt; }

 private:
  row_lock_tx& tx_;
};

class row_locker : public locker {
 public:
  explicit row_locker(const database& db) : db_(db) {}
  std::optional<release_result> hold(int i, std::chrono::milliseconds timeout, const hold_hooks& hooks) override {
    bool entered = false;
    try {
      const bool ran = try_with_row_lock_for(db_, resource_name(i), timeout, [&](row_lock_tx& tx) {
        entered = true;
        row_section s(tx);
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
};

}  // namespace

std::unique_ptr<locker> make_locker(const run_config& cfg, const database& db, int thread_index) {
  session_lock_options session;
  session.keepalive = cfg.keepalive;
  session.on_unlock_error = [](const std::exception&) {};
  table_lock_options table;
  table.ttl = cfg.lease;
  table.on_unlock_error = [](const std::exception&) {};
  switch (cfg.ctl) {
    case control::unsafe_release:
      return std::make_unique<unsafe_release_locker>(db, cfg.resources, table);
    case control::client_clock:
      // One rogue thread per process among sqllock's own lockers.
      if (thread_index == 0) return make_client_clock_locker(cfg, db);
      break;
    case control::none:
      break;
  }
  switch (cfg.kind) {
    case lock_kind::table: return std::make_unique<object_locker<table_lock>>(db, cfg.resources, table);
    case lock_kind::advisory: return std::make_unique<object_locker<advisory_lock>>(db, cfg.resources, session);
    case lock_kind::named: return std::make_unique<object_locker<named_lock>>(db, cfg.resources, session);
    case lock_kind::row: return std::make_unique<row_locker>(db);
  }
  return nullptr;
}

}  // namespace sqllock::fault
