#include "fault/rogue_locker.hpp"

#include <unistd.h>

#include <random>
#include <thread>
#include <utility>

#include "fault/history.hpp"
#include "fault/schema.hpp"
#include "fault/semaphore_holder.hpp"
#include "sqllock/error.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {
namespace {

using test::sql;

constexpr const char* kRead =
    "SELECT fence, CAST(EXTRACT(EPOCH FROM expires_at) * 1000000 AS bigint) FROM distributed_lock WHERE resource = $1";
// The columns sqllock's acquire writes, with this peer's values and a fresh fence.
constexpr const char* kInsert =
    "INSERT INTO distributed_lock (resource, owner_token, holder_session, count, fence, holder_host, holder_pid,"
    " holder_thread, lease_ms, auto_renew, acquired_at, renewed_at, expires_at)"
    " SELECT $1, $2, $2, 1, nextval('distributed_lock_fence_seq'), 'rogue', CAST($3 AS bigint), 'rogue',"
    " CAST($4 AS bigint), false, t.now, t.now, t.now + CAST($4 AS bigint) * interval '1 millisecond'"
    " FROM (SELECT clock_timestamp() AS now) AS t ON CONFLICT (resource) DO NOTHING RETURNING fence";
constexpr const char* kTakeOver =
    "UPDATE distributed_lock SET owner_token = $2, holder_session = $2, count = 1,"
    " fence = nextval('distributed_lock_fence_seq'), holder_host = 'rogue', holder_pid = CAST($3 AS bigint),"
    " holder_thread = 'rogue', lease_ms = CAST($4 AS bigint), auto_renew = false, acquired_at = clock_timestamp(),"
    " renewed_at = clock_timestamp(), expires_at = clock_timestamp() + CAST($4 AS bigint) * interval '1 millisecond'"
    " WHERE resource = $1 AND fence = CAST($5 AS bigint) RETURNING fence";
constexpr const char* kRelease =
    "DELETE FROM distributed_lock WHERE resource = $1 AND owner_token = $2 AND fence = CAST($3 AS bigint)";

// The count-then-insert peer's statements: live permits of a name; its own permit row (the
// columns sqllock's acquire writes, a fresh fence); its release by owner and fence.
constexpr const char* kCountPermits =
    "SELECT COUNT(*) FROM distributed_lock_permits WHERE resource = $1 AND expires_at > clock_timestamp()";
constexpr const char* kInsertPermit =
    "INSERT INTO distributed_lock_permits (resource, slot, permits, owner_token, holder_session, fence, holder_host,"
    " holder_pid, holder_thread, lease_ms, auto_renew, acquired_at, renewed_at, expires_at)"
    " SELECT $1, CAST($2 AS integer), CAST($2 AS integer) + 1, $3, $3, nextval('distributed_lock_fence_seq'), 'rogue',"
    " CAST($4 AS bigint), 'rogue', CAST($5 AS bigint), false, t.now, t.now,"
    " t.now + CAST($5 AS bigint) * interval '1 millisecond'"
    " FROM (SELECT clock_timestamp() AS now) AS t RETURNING fence";
constexpr const char* kReleasePermit =
    "DELETE FROM distributed_lock_permits WHERE resource = $1 AND owner_token = $2 AND fence = CAST($3 AS bigint)";

std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// unsafe_release_holders: `inner`'s hold, with the unsafe DELETE before sqllock's own release. The
// history says how that DELETE went for the hold: ok when the row it deleted was the hold's own
// (its fence), not_held when it found none or deleted another holder's row. So a holder whose row
// a stale peer's DELETE took is never reported released by the row of a third holder that its own
// DELETE took in turn — which, with a dozen threads on one name, it nearly always found, and the
// foreign-delete checker then missed the deletes (0 of 45 overlaps in one run).
class unsafe_release_holder : public test::lock_holder {
 public:
  unsafe_release_holder(const database& db, std::string res, std::unique_ptr<test::lock_holder> inner)
      : db_(db), res_(std::move(res)), inner_(std::move(inner)) {}

  std::optional<test::release_result> hold(std::chrono::milliseconds timeout, const test::hold_hooks& hooks) override {
    test::release_result mine = test::release_result::error;
    std::int64_t fence = -1;
    test::hold_hooks h = hooks;
    h.body = [&](test::lock_section& section) {
      fence = section.fence();
      hooks.body(section);
    };
    h.before_release = [&] {
      hooks.before_release();
      try {
        const auto r = sql(db_, "DELETE FROM distributed_lock WHERE resource = $1 RETURNING fence", {res_});
        const bool own = !r.rows.empty() && r.rows[0].at(0) == std::to_string(fence);
        mine = own ? test::release_result::ok : test::release_result::not_held;
      } catch (const error&) {
      }
    };
    const auto r = inner_->hold(timeout, h);
    if (r) return mine;
    return r;
  }

 private:
  const database& db_;
  std::string res_;
  std::unique_ptr<test::lock_holder> inner_;
};

class client_clock_holder : public test::lock_holder {
 public:
  client_clock_holder(const run_config& cfg, const database& db, std::string res)
      : db_(db), res_(std::move(res)), lease_ms_(cfg.lease.count()), skew_us_(5 * cfg.lease.count() * 1000),
        token_("rogue-" + std::to_string(::getpid())) {}

  std::optional<test::release_result> hold(std::chrono::milliseconds timeout, const test::hold_hooks& hooks) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::optional<std::int64_t> fence;
    while (!fence && std::chrono::steady_clock::now() < deadline) {
      fence = try_take(res_);
      if (!fence) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!fence) return std::nullopt;
    test::pooled_section s(db_, *fence);
    hooks.body(s);
    hooks.before_release();
    try {
      const auto r = sql(db_, kRelease, {res_, token_, *fence});
      return r.affected > 0 ? test::release_result::ok : test::release_result::not_held;
    } catch (const error&) {
      return test::release_result::error;
    }
  }

 private:
  // One attempt: insert a missing row, or take over one whose expiry our fast clock has passed.
  std::optional<std::int64_t> try_take(const std::string& res) {
    const auto pid = static_cast<std::int64_t>(::getpid());
    const auto seen = sql(db_, kRead, {res});
    if (seen.rows.empty()) {
      const auto r = sql(db_, kInsert, {res, token_, pid, lease_ms_});
      if (!r.rows.empty() && r.rows[0][0]) return std::stoll(*r.rows[0][0]);
      return std::nullopt;
    }
    const std::int64_t old_fence = std::stoll(seen.rows[0][0].value_or("0"));
    const std::int64_t expires_us = std::stoll(seen.rows[0][1].value_or("0"));
    if (wall_us() + skew_us_ < expires_us) return std::nullopt;
    const auto r = sql(db_, kTakeOver, {res, token_, pid, lease_ms_, old_fence});
    if (!r.rows.empty() && r.rows[0][0]) return std::stoll(*r.rows[0][0]);
    return std::nullopt;
  }

  const database& db_;
  std::string res_;
  std::int64_t lease_ms_, skew_us_;
  std::string token_;
};

class count_then_insert_holder : public test::lock_holder {
 public:
  count_then_insert_holder(const run_config& cfg, const database& db, std::string res)
      : db_(db), res_(std::move(res)), permits_(cfg.permits), lease_ms_(cfg.lease.count()),
        rng_(std::random_device{}() ^ static_cast<std::uint64_t>(::getpid())) {}

  std::optional<test::release_result> hold(std::chrono::milliseconds timeout, const test::hold_hooks& hooks) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::optional<std::pair<std::int64_t, std::int64_t>> got;  // (slot, fence)
    while (!got && std::chrono::steady_clock::now() < deadline) {
      got = try_take();
      if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!got) return std::nullopt;
    slot_section s(db_, got->second, got->first);
    hooks.body(s);
    hooks.before_release();
    try {
      const auto r = sql(db_, kReleasePermit, {res_, token_, got->second});
      return r.affected > 0 ? test::release_result::ok : test::release_result::not_held;
    } catch (const error&) {
      return test::release_result::error;
    }
  }

 private:
  // One attempt: count, wait 0–5 ms, insert when the count was below N.
  std::optional<std::pair<std::int64_t, std::int64_t>> try_take() {
    const auto counted = sql(db_, kCountPermits, {res_});
    const std::int64_t live = std::stoll(counted.rows.at(0).at(0).value_or("0"));
    if (live >= permits_) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 5000)(rng_)));
    // A slot no sqllock permit uses, unique with high probability (a clash only fails the insert).
    const std::int64_t slot = permits_ + std::uniform_int_distribution<std::int64_t>(0, 999'999)(rng_);
    token_ = "rogue-" + std::to_string(::getpid()) + "-" + std::to_string(++attempts_);
    const auto r = sql(db_, kInsertPermit, {res_, slot, token_, static_cast<std::int64_t>(::getpid()), lease_ms_});
    if (r.rows.empty() || !r.rows[0][0]) return std::nullopt;
    const std::int64_t fence = std::stoll(*r.rows[0][0]);
    return std::pair{slot, fence};
  }

  const database& db_;
  std::string res_;
  std::int64_t permits_, lease_ms_;
  std::mt19937_64 rng_;
  std::string token_;  // this attempt's owner token
  std::int64_t attempts_ = 0;
};

}  // namespace

std::vector<std::unique_ptr<test::lock_holder>> unsafe_release_holders(
    const database& db, std::vector<std::unique_ptr<test::lock_holder>> table_holders) {
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (std::size_t i = 0; i < table_holders.size(); ++i)
    out.push_back(
        std::make_unique<unsafe_release_holder>(db, resource_name(static_cast<int>(i)), std::move(table_holders[i])));
  return out;
}

std::vector<std::unique_ptr<test::lock_holder>> client_clock_holders(const run_config& cfg, const database& db) {
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (int i = 0; i < cfg.resources; ++i)
    out.push_back(std::make_unique<client_clock_holder>(cfg, db, resource_name(i)));
  return out;
}

}  // namespace sqllock::fault

namespace sqllock::fault {

std::vector<std::unique_ptr<test::lock_holder>> count_then_insert_holders(const run_config& cfg, const database& db) {
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (int i = 0; i < cfg.resources; ++i)
    out.push_back(std::make_unique<count_then_insert_holder>(cfg, db, resource_name(i)));
  return out;
}

}  // namespace sqllock::fault
