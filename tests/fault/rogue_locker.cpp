#include "fault/rogue_locker.hpp"

#include <unistd.h>

#include <thread>

#include "fault/history.hpp"
#include "fault/schema.hpp"
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

std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// unsafe_release_holders: `inner`'s hold, with the unsafe DELETE before sqllock's own release.
class unsafe_release_holder : public test::lock_holder {
 public:
  unsafe_release_holder(const database& db, std::string res, std::unique_ptr<test::lock_holder> inner)
      : db_(db), res_(std::move(res)), inner_(std::move(inner)) {}

  std::optional<test::release_result> hold(std::chrono::milliseconds timeout, const test::hold_hooks& hooks) override {
    test::release_result mine = test::release_result::error;
    test::hold_hooks h = hooks;
    h.before_release = [&] {
      hooks.before_release();
      try {
        const auto r = sql(db_, "DELETE FROM distributed_lock WHERE resource = $1", {res_});
        mine = r.affected > 0 ? test::release_result::ok : test::release_result::not_held;
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

}  // namespace

std::vector<std::unique_ptr<test::lock_holder>> unsafe_release_holders(
    const database& db, std::vector<std::unique_ptr<test::lock_holder>> table_holders) {
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (std::size_t i = 0; i < table_holders.size(); ++i)
    out.push_back(std::make_unique<unsafe_release_holder>(db, resource_name(static_cast<int>(i)), std::move(table_holders[i])));
  return out;
}

std::vector<std::unique_ptr<test::lock_holder>> client_clock_holders(const run_config& cfg, const database& db) {
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (int i = 0; i < cfg.resources; ++i) out.push_back(std::make_unique<client_clock_holder>(cfg, db, resource_name(i)));
  return out;
}

}  // namespace sqllock::fault
