#include "fault/queue_rogue.hpp"

#include <unistd.h>

#include <random>
#include <thread>

#include "fault/queue_holder.hpp"
#include "fault/schema.hpp"
#include "sqllock/error.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {
namespace {

using test::sql;

// A place taken the way sqllock's enqueue takes one (dialect/queue_sql.cpp: the name's advisory
// key, then the ticket and the clock), for owner $3, kind $2, write $4 (1 or 0), lease $5 ms.
constexpr const char* kEnqueue =
    "INSERT INTO distributed_lock_queue (resource, kind, ticket, owner_token, holder_session, write_count, read_count,"
    " holder_host, holder_pid, holder_thread, lease_ms, auto_renew, enqueued_at, renewed_at, expires_at)"
    " SELECT CAST($1 AS text), CAST($2 AS text), nextval('distributed_lock_fence_seq'), CAST($3 AS text),"
    " CAST($3 AS text), CAST($4 AS bigint), 1 - CAST($4 AS bigint), 'rogue', CAST($6 AS bigint), 'rogue',"
    " CAST($5 AS bigint), false, t.now, t.now, t.now + CAST($5 AS bigint) * interval '1 millisecond'"
    " FROM (SELECT clock_timestamp() AS now FROM (SELECT pg_advisory_xact_lock(hashtextextended(CAST($1 AS text),"
    " 3141592653589793238)) OFFSET 0) AS g) AS t RETURNING ticket";
// Leaves the queue and wakes sqllock's waiters of the name, as sqllock's own leave does.
constexpr const char* kLeave =
    "WITH gone AS (DELETE FROM distributed_lock_queue WHERE resource = CAST($1 AS text) AND kind = CAST($2 AS text)"
    " AND ticket = CAST($3 AS bigint) AND owner_token = CAST($4 AS text) RETURNING resource)"
    " SELECT pg_notify('sqllock_distributed_lock', resource) FROM gone";
// The unordered queue's lease row of a name: taken when absent or expired, with the expiry of
// the taker's place.
constexpr const char* kTakeBarge =
    "INSERT INTO fault_barge (k, ticket, expires_at)"
    " SELECT CAST($1 AS text), ticket, expires_at FROM distributed_lock_queue"
    " WHERE resource = CAST($1 AS text) AND kind = 'F' AND ticket = CAST($2 AS bigint)"
    " ON CONFLICT (k) DO UPDATE SET ticket = EXCLUDED.ticket, expires_at = EXCLUDED.expires_at"
    " WHERE fault_barge.expires_at <= clock_timestamp() RETURNING ticket";
constexpr const char* kFreeBarge = "DELETE FROM fault_barge WHERE k = $1 AND ticket = CAST($2 AS bigint)";

// A place of this process's rogue: its ticket and owner token.
struct rogue_place {
  std::int64_t ticket = 0;
  std::string owner;
};

class rogue_base : public test::lock_holder {
 protected:
  rogue_base(const database& db, std::string res, std::string kind, int thread)
      : db_(db), res_(std::move(res)), kind_(std::move(kind)), thread_(thread),
        rng_(std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 16) ^
             static_cast<std::uint64_t>(thread)) {}

  rogue_place enqueue(bool write, std::chrono::milliseconds lease) {
    rogue_place p;
    p.owner = "rogue-" + std::to_string(::getpid()) + "." + std::to_string(thread_) + "." + std::to_string(++attempts_);
    const auto r = sql(db_, kEnqueue,
                       {res_, kind_, p.owner, std::int64_t{write ? 1 : 0}, static_cast<std::int64_t>(lease.count()),
                        static_cast<std::int64_t>(::getpid())});
    p.ticket = std::stoll(r.rows.at(0).at(0).value_or("0"));
    return p;
  }

  // Leaves the queue; ok when the place was still there.
  test::release_result leave(const rogue_place& p) {
    try {
      return sql(db_, kLeave, {res_, kind_, p.ticket, p.owner}).rows.empty() ? test::release_result::not_held
                                                                             : test::release_result::ok;
    } catch (const error&) {
      return test::release_result::error;
    }
  }

  // The section in `write` mode under the place's ticket, then the release (`release`).
  template <class Release>
  test::release_result section(const rogue_place& p, bool write, const test::hold_hooks& hooks, Release&& release) {
    {
      queue_section s(db_, p.ticket, write);
      hooks.body(s);
      hooks.before_release();
    }
    return release();
  }

  const database& db_;
  const std::string res_, kind_;
  const int thread_;
  std::mt19937_64 rng_;
  std::int64_t attempts_ = 0;
};

class unordered_queue_holder final : public rogue_base {
 public:
  unordered_queue_holder(const run_config& cfg, const database& db, std::string res, int thread)
      : rogue_base(db, std::move(res), "F", thread), lease_(cfg.lease) {}

  std::optional<test::release_result> hold(std::chrono::milliseconds wait, const test::hold_hooks& hooks) override {
    const rogue_place p = enqueue(true, wait + 3 * lease_);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    bool held = false;
    try {
      while (!held && std::chrono::steady_clock::now() < deadline) {
        held = !sql(db_, kTakeBarge, {res_, p.ticket}).rows.empty();
        // Whoever polls first: 1–10 ms apart, so the waiters' order is random.
        if (!held)
          std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(1, 10)(rng_)));
      }
    } catch (const error&) {
      leave(p);
      throw;
    }
    if (!held) {
      leave(p);
      return std::nullopt;
    }
    return section(p, true, hooks, [&] {
      const auto r = leave(p);  // the place first: its end must precede the next grant
      try {
        sql(db_, kFreeBarge, {res_, p.ticket});
      } catch (const error&) {
      }
      return r;
    });
  }

 private:
  std::chrono::milliseconds lease_;
};

class rogue_reader_holder final : public rogue_base {
 public:
  rogue_reader_holder(const run_config& cfg, const database& db, std::string res, int thread)
      : rogue_base(db, std::move(res), "R", thread), lease_(cfg.lease) {}

  std::optional<test::release_result> hold(std::chrono::milliseconds, const test::hold_hooks& hooks) override {
    const rogue_place p = enqueue(false, 3 * lease_);  // and in at once
    return section(p, false, hooks, [&] { return leave(p); });
  }

 private:
  std::chrono::milliseconds lease_;
};

class leaked_place_holder final : public rogue_base {
 public:
  leaked_place_holder(const run_config& cfg, const database& db, std::string res, int thread,
                      std::unique_ptr<test::lock_holder> inner)
      : rogue_base(db, std::move(res), "F", thread), lease_(cfg.lease), inner_(std::move(inner)) {}

  std::optional<test::release_result> hold(std::chrono::milliseconds wait, const test::hold_hooks& hooks) override {
    const auto r = inner_->hold(wait, hooks);
    if (r == test::release_result::ok) {
      try {
        enqueue(true, 3 * lease_);  // and never seen again
      } catch (const error&) {
      }
    }
    return r;
  }

 private:
  std::chrono::milliseconds lease_;
  std::unique_ptr<test::lock_holder> inner_;
};

template <class Holder>
std::vector<std::unique_ptr<test::lock_holder>> holders_of(const run_config& cfg, const database& db, int thread) {
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (int i = 0; i < cfg.resources; ++i) out.push_back(std::make_unique<Holder>(cfg, db, resource_name(i), thread));
  return out;
}

}  // namespace

std::vector<std::unique_ptr<test::lock_holder>> leaked_place_holders(
    const run_config& cfg, const database& db, int thread, std::vector<std::unique_ptr<test::lock_holder>> inner) {
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (int i = 0; i < cfg.resources; ++i)
    out.push_back(std::make_unique<leaked_place_holder>(cfg, db, resource_name(i), thread,
                                                        std::move(inner.at(static_cast<std::size_t>(i)))));
  return out;
}

void create_barge_table(const database& db) {
  sql(db, "CREATE TABLE fault_barge (k text PRIMARY KEY, ticket bigint NOT NULL, expires_at timestamptz NOT NULL)");
}

std::vector<std::unique_ptr<test::lock_holder>> unordered_queue_holders(const run_config& cfg, const database& db,
                                                                        int thread) {
  return holders_of<unordered_queue_holder>(cfg, db, thread);
}

std::vector<std::unique_ptr<test::lock_holder>> rogue_reader_holders(const run_config& cfg, const database& db,
                                                                     int thread) {
  return holders_of<rogue_reader_holder>(cfg, db, thread);
}

}  // namespace sqllock::fault
