// The release rule of a semaphore permit (core/lease/lease_release.hpp) on a fake clock and a
// scripted permits table: a release whose answer was lost gives the permit up, and the row it may
// have left is deleted as an orphan by the handle's next renewal; a release the server refused
// keeps the permit held and renewed for another release(). No server; milliseconds of real time.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "dialect/permit_sql.hpp"
#include "dialect/renewal_sql.hpp"
#include "sqllock/error.hpp"
#include "sqllock/semaphore.hpp"
#include "unit/fake_handle.hpp"

namespace test {
namespace {

using namespace std::chrono_literals;

// The permits table of one fake PostgreSQL server: grants the lowest free slot, deletes a permit
// by (resource, owner, fence), renews every row. The next `failing_releases` releases throw
// `release_error` instead, before touching the row.
class permit_rows {
 public:
  explicit permit_rows(fake_handle& h)
      : sql_(d::permit_statements(h.impl.dialect(), h.impl.options().table)),
        renew_(
            d::renewal_statements(h.impl.dialect(), h.impl.options().table, d::lease_table::permits)->at(0).statement) {
    h.server->on(sql_->acquire, [s = s_](std::span<const d::value> p) {
      std::lock_guard lock(s->mu);
      const auto permits = std::stoll(text(p[1]));
      for (std::int64_t slot = 0; slot < permits; ++slot) {
        if (s->rows.count(key(text(p[0]), slot))) continue;
        s->rows[key(text(p[0]), slot)] = {text(p[2]), ++s->fences};
        return rows({{std::to_string(slot), std::to_string(s->fences)}});
      }
      return rows({});
    });
    h.server->on(sql_->release, [s = s_](std::span<const d::value> p) {
      std::unique_lock lock(s->mu);
      if (s->failing_releases > 0) {
        --s->failing_releases;
        const auto fail = s->release_error;
        lock.unlock();
        fail();
      }
      for (auto it = s->rows.begin(); it != s->rows.end(); ++it) {
        if (it->first.first == text(p[0]) && it->second.owner == text(p[1]) &&
            std::to_string(it->second.fence) == text(p[2])) {
          s->rows.erase(it);
          return rows({{"1"}});
        }
      }
      return rows({});
    });
    h.server->on(renew_, [s = s_](std::span<const d::value>) {
      std::lock_guard lock(s->mu);
      std::vector<d::row> out;
      for (const auto& [k, row] : s->rows) out.push_back({k.first, row.owner, std::to_string(row.fence)});
      return rows(std::move(out));
    });
  }

  void fail_next_release(std::function<void()> error) {
    std::lock_guard lock(s_->mu);
    s_->failing_releases = 1;
    s_->release_error = std::move(error);
  }
  bool has_row(const std::string& resource, std::int64_t slot) const {
    std::lock_guard lock(s_->mu);
    return s_->rows.count(key(resource, slot)) > 0;
  }
  const std::string& release_sql() const { return sql_->release; }
  const std::string& renew_sql() const { return renew_; }

 private:
  using slot_key = std::pair<std::string, std::int64_t>;
  static slot_key key(const std::string& resource, std::int64_t slot) { return {resource, slot}; }
  struct row {
    std::string owner;
    std::int64_t fence = 0;
  };
  struct state {
    mutable std::mutex mu;
    std::map<slot_key, row> rows;
    std::int64_t fences = 40;
    int failing_releases = 0;
    std::function<void()> release_error;
  };
  std::shared_ptr<const d::permit_sql> sql_;
  std::string renew_;
  std::shared_ptr<state> s_ = std::make_shared<state>();
};

sqllock::semaphore_options lease(std::chrono::milliseconds ttl) {
  sqllock::semaphore_options o;
  o.ttl = ttl;
  o.on_unlock_error = [](const std::exception&) {};
  return o;
}

class PermitUnitTest : public ::testing::Test {
 protected:
  fake_handle h;
  permit_rows table{h};
  sqllock::semaphore pool{h.db, "pool", 2, lease(3s)};
};

// The connection broke after the DELETE was sent: the server may or may not have run it. The
// permit is given up at once (outcome_unknown; release() again says not_held), and if its row is
// still there the handle's next renewal finds it with no hold behind it and deletes it.
TEST_F(PermitUnitTest, AReleaseWhoseAnswerWasLostGivesThePermitUpAndItsRowIsDeletedAsAnOrphan) {
  auto kept = pool.try_acquire();  // keeps the handle renewing
  auto given_up = pool.try_acquire();
  ASSERT_TRUE(kept && given_up);
  const auto slot = given_up->slot();
  table.fail_next_release([] { throw sqllock::connection_error("fake: the connection broke"); });
  EXPECT_THROW(given_up->release(), sqllock::outcome_unknown);
  EXPECT_FALSE(given_up->holds());
  EXPECT_THROW(given_up->release(), sqllock::not_held) << "a permit given up was released again";
  EXPECT_TRUE(table.has_row("pool", slot)) << "the fake server never ran the DELETE";
  h.clock->advance(1100ms);  // a third of the lease: the next renewal
  EXPECT_TRUE(h.server->await(table.release_sql(), 2)) << "the orphan row was not deleted";
  EXPECT_TRUE(eventually([&] { return !table.has_row("pool", slot); }));
  EXPECT_TRUE(kept->holds());
  EXPECT_TRUE(table.has_row("pool", kept->slot()));
  EXPECT_TRUE(h.server->unexpected().empty());
}

// The server refused the DELETE (here: a permission error): nothing changed there, so the permit
// is still held and renewed, and another release() gives it back.
TEST_F(PermitUnitTest, AReleaseTheServerRefusedKeepsThePermitHeldAndRenewedForAnotherRelease) {
  auto p = pool.try_acquire();
  ASSERT_TRUE(p);
  const auto slot = p->slot();
  table.fail_next_release([] { throw sqllock::backend_error("fake: permission denied", "42501", 0); });
  EXPECT_THROW(p->release(), sqllock::backend_error);
  EXPECT_TRUE(p->holds()) << "a release that changed nothing gave the permit up";
  const auto renewals = h.server->count(table.renew_sql());
  h.clock->advance(1100ms);
  EXPECT_TRUE(h.server->await(table.renew_sql(), renewals + 1)) << "the permit is no longer renewed";
  EXPECT_TRUE(p->holds());
  p->release();
  EXPECT_FALSE(p->holds());
  EXPECT_FALSE(table.has_row("pool", slot));
  EXPECT_TRUE(h.server->unexpected().empty());
}

}  // namespace
}  // namespace test
