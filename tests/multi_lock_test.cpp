// What only multi_lock does, on every driver × dialect pair: a set is taken whole or not at all,
// nothing is held while waiting, callers in any order never deadlock, its rows are ordinary lock
// rows (a table_lock of a member excludes it and re-enters it), fences per name, bad input, the
// wake-up on the last release, round trips per attempt, real processes racing on overlapping sets,
// and `sqllock run` with several --lock. The contract every lock kind shares (refusal, timed waits,
// re-entry, over-release, threads, bad names, killed holders) runs for multi_lock in
// tests/contract/ (kind "multi_lock": the set {name, name + "/second"}).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "common/identity.hpp"
#include "common/uri.hpp"
#include "core/handle/database_impl.hpp"
#include "core/lease/lease_registry.hpp"
#include "core/handle/open_session.hpp"
#include "dialect/postgresql_keys.hpp"
#include "sqllock/error.hpp"
#include "sqllock/multi_lock.hpp"
#include "sqllock/table_lock.hpp"
#include "support/bad_input.hpp"
#include "support/expect_error.hpp"
#include "support/lock_fixture.hpp"
#include "support/lock_rows.hpp"
#include "support/lockable.hpp"
#include "support/processes.hpp"
#include "support/program.hpp"
#include "support/temp_dir.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using names = std::vector<std::string>;

// The standard library's lock wrappers work with multi_lock.
static_assert(std_wrappable<multi_lock>);

class MultiLockTest : public LockTableTest {
 protected:
  static multi_lock_options opts(std::chrono::milliseconds ttl = 30s, bool renew = true) {
    multi_lock_options o;
    o.ttl = ttl;
    o.auto_renew = renew;
    return o;
  }

  // Rows of the lock table among `resources`, as resource → owner_token.
  std::map<std::string, std::string> owners(const database& db, const names& resources) const {
    std::map<std::string, std::string> out;
    for (const auto& r : resources)
      if (auto o = column(db, r, "owner_token")) out[r] = *o;
    return out;
  }
  std::int64_t count_of(const database& db, const std::string& resource) const {
    const auto c = column(db, resource, "count");
    return c ? std::stoll(*c) : 0;
  }
};

TEST_P(MultiLockTest, ASetIsTakenWholeOrNotAtAll) {
  auto db1 = open();
  auto db2 = open();
  auto observer = open();
  table_lock other(db1, "b");
  ASSERT_TRUE(other.try_lock());
  multi_lock set(db2, {"c", "a", "b"});
  EXPECT_FALSE(set.try_lock()) << "b is held by another owner";
  EXPECT_FALSE(set.try_lock_for(200ms));
  EXPECT_FALSE(set.holds());
  EXPECT_THROW(set.fence("a"), not_held);
  EXPECT_EQ(owners(observer, {"a", "b", "c"}).size(), 1u) << "only the other owner's b: nothing of the set is taken";
  EXPECT_EQ(rows(observer), 1);
  other.unlock();
  ASSERT_TRUE(set.try_lock());
  const auto held = owners(observer, {"a", "b", "c"});
  ASSERT_EQ(held.size(), 3u);
  EXPECT_EQ(held.at("a"), held.at("b"));
  EXPECT_EQ(held.at("b"), held.at("c")) << "one owner holds every name";
  EXPECT_TRUE(set.holds());
  set.unlock();
  EXPECT_EQ(rows(observer), 0);
}

TEST_P(MultiLockTest, NothingIsHeldWhileWaiting) {
  auto db1 = open();
  auto db2 = open();
  auto db3 = open();
  table_lock_options holder;
  holder.owner = "holder";  // released from this thread, locked here too: explicit owner for clarity
  table_lock busy(db1, "b", holder);
  busy.lock();
  multi_lock set(db2, {"a", "b", "c"});
  auto waiter = std::async(std::launch::async, [&] {
    set.lock();
    return true;
  });
  // While the waiter waits for b, a and c stay free: another owner takes and gives them back.
  const auto until = clock_type::now() + 600ms;
  int checks = 0;
  while (clock_type::now() < until) {
    table_lock a(db3, "a"), c(db3, "c");
    EXPECT_TRUE(a.try_lock()) << "the waiter holds a while it waits";
    EXPECT_TRUE(c.try_lock()) << "the waiter holds c while it waits";
    a.unlock();
    c.unlock();
    ++checks;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_GT(checks, 5);
  EXPECT_EQ(waiter.wait_for(0ms), std::future_status::timeout) << "it waits for b";
  busy.unlock();
  ASSERT_EQ(waiter.wait_for(scaled(5s)), std::future_status::ready) << "the waiter never got the set";
  EXPECT_TRUE(waiter.get());
  EXPECT_EQ(rows(db3), 3);
  // The waiter's thread holds it: release it there is not possible now (the thread ended), so
  // the object's destructor gives it back.
}

TEST_P(MultiLockTest, CallersInOppositeOrdersNeverDeadlockAndExcludeEachOther) {
  constexpr int kRounds = 30;
  const std::vector<names> sets{{"x", "y", "z"}, {"z", "y", "x"}, {"y", "w"}, {"w", "z"}};
  std::map<std::string, std::atomic<int>> inside;
  for (const auto& n : {"w", "x", "y", "z"}) inside[n] = 0;
  std::atomic<int> overlaps{0};
  std::vector<std::future<void>> workers;
  for (const auto& set_names : sets) {
    workers.push_back(std::async(std::launch::async, [&, set_names] {
      auto db = open();  // each caller its own handle: separate owners, sessions, connections
      multi_lock set(db, set_names, opts());
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard guard(set);
        for (const auto& n : set_names)
          if (inside[n]++ != 0) ++overlaps;
        std::this_thread::sleep_for(1ms);
        for (const auto& n : set_names) --inside[n];
      }
    }));
  }
  for (auto& w : workers) {
    ASSERT_EQ(w.wait_for(scaled(120s)), std::future_status::ready) << "a caller never finished: deadlock";
    w.get();
  }
  EXPECT_EQ(overlaps.load(), 0) << "two holders of one name at once";
  auto db = open();
  EXPECT_EQ(rows(db), 0);
}

TEST_P(MultiLockTest, ATableLockOfAMemberExcludesTheSetAndIsExcludedByIt) {
  auto db1 = open();
  auto db2 = open();
  multi_lock set(db1, {"a", "b"});
  ASSERT_TRUE(set.try_lock());
  table_lock b(db2, "b");
  EXPECT_FALSE(b.try_lock()) << "the set holds b";
  set.unlock();
  ASSERT_TRUE(b.try_lock());
  EXPECT_FALSE(set.try_lock()) << "a table_lock of b excludes the set";
  EXPECT_EQ(rows(db1), 1) << "and the refused set took nothing (not a)";
  b.unlock();
  EXPECT_TRUE(set.try_lock());
  set.unlock();
}

TEST_P(MultiLockTest, EveryNameGetsItsOwnFenceAndFencesIncrease) {
  auto db1 = open();
  auto db2 = open();
  multi_lock set(db1, {"c", "b", "a"});
  EXPECT_EQ(set.names(), (names{"a", "b", "c"})) << "sorted by bytes";
  ASSERT_TRUE(set.try_lock());
  const auto first = set.fences();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(std::set<std::int64_t>(first.begin(), first.end()).size(), 3u) << "one fence per name";
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_GT(first[i], 0);
    EXPECT_EQ(set.fence(set.names()[i]), first[i]);
    EXPECT_EQ(column(db1, set.names()[i], "fence"), std::to_string(first[i])) << "the row's own fence";
  }
  EXPECT_THROW(set.fence("d"), invalid_argument) << "not a name of the set";
  set.unlock();
  table_lock b(db2, "b");
  ASSERT_TRUE(b.try_lock());
  EXPECT_GT(b.fence(), first[1]) << "b's next holder, a table_lock, gets a higher fence";
  const auto b_fence = b.fence();
  b.unlock();
  ASSERT_TRUE(set.try_lock());
  const auto second = set.fences();
  for (std::size_t i = 0; i < 3; ++i) EXPECT_GT(second[i], first[i]) << set.names()[i];
  EXPECT_GT(second[1], b_fence);
  set.unlock();

  // Take-over of an expired set by another owner: new fences too, and the late holder cannot
  // release what is now someone else's.
  const auto ttl = scaled(300ms);
  multi_lock late(db1, {"a", "b", "c"}, opts(ttl, false));
  multi_lock next(db2, {"a", "b", "c"});
  ASSERT_TRUE(late.try_lock());
  const auto late_fences = late.fences();
  EXPECT_FALSE(next.try_lock());
  std::this_thread::sleep_for(ttl + 100ms);
  EXPECT_FALSE(late.holds());
  ASSERT_TRUE(next.try_lock());
  for (std::size_t i = 0; i < 3; ++i) EXPECT_GT(next.fences()[i], late_fences[i]);
  EXPECT_THROW(late.release(), not_held);
  EXPECT_EQ(rows(db2), 3) << "the late holder's release left the new holder's rows alone";
  next.unlock();
}

TEST_P(MultiLockTest, AnOwnerReEntersTheNamesItHoldsThroughATableLock) {
  auto db = open();
  auto observer = open();
  table_lock a(db, "a");
  ASSERT_TRUE(a.try_lock());
  multi_lock set(db, {"a", "b"});  // same handle, same thread: the same owner
  ASSERT_TRUE(set.try_lock()) << "the owner's own a does not refuse the set";
  EXPECT_EQ(count_of(observer, "a"), 2) << "a re-entry: a's count goes up";
  EXPECT_EQ(count_of(observer, "b"), 1);
  EXPECT_EQ(set.fence("a"), a.fence()) << "a re-entry keeps the fence";
  set.unlock();
  EXPECT_EQ(count_of(observer, "a"), 1);
  EXPECT_EQ(count_of(observer, "b"), 0);
  EXPECT_TRUE(a.holds());
  // And the other way round: the set first, then a table_lock of a member.
  ASSERT_TRUE(set.try_lock());
  ASSERT_TRUE(a.try_lock());
  EXPECT_EQ(count_of(observer, "a"), 3);
  a.unlock();
  a.unlock();
  EXPECT_TRUE(set.holds());
  EXPECT_EQ(count_of(observer, "a"), 1);
  set.unlock();
  EXPECT_EQ(rows(observer), 0);
  // Another thread of the handle is another owner: refused while this thread holds a.
  ASSERT_TRUE(a.try_lock());
  std::thread([&] { EXPECT_FALSE(set.try_lock()); }).join();
  a.unlock();
}

TEST_P(MultiLockTest, BadInputIsRefusedBeforeAnythingIsSent) {
  auto db = open();
  table_lock bystander(db, "bystander");
  ASSERT_TRUE(bystander.try_lock());
  const auto before = read_lock_state(db);
  names too_many;
  for (std::size_t i = 0; i <= multi_lock::max_names; ++i) {
    std::string name = "n";  // appended: "n" + std::to_string(i) trips g++ 12's false -Wrestrict at -O3
    name += std::to_string(i);
    too_many.push_back(std::move(name));
  }
  struct bad_set {
    std::string label;
    names set;
    std::vector<std::string> says;  // owned: an initializer_list's array would die with the vector's initialiser
  };
  const std::vector<bad_set> bad{
      {"empty", {}, {"at least one", "empty"}},
      {"duplicate", {"a", "b", "a"}, {"'a'", "twice"}},
      {"duplicate of the only name", {"x", "x"}, {"'x'", "twice"}},
      {"too many", too_many, {"at most 64", "got 65"}},
      {"an empty name", {"ok", ""}, {"name 2 of 2", "lock name is empty"}},
      {"an over-long name", {std::string(256, 'x'), "ok"}, {"name 1 of 2", "256 bytes"}},
      {"invalid UTF-8", {"ok", "bad\xff"}, {"name 2 of 2", "UTF-8"}},
      {"a NUL byte", {"ok", std::string("a\0b", 3)}, {"name 2 of 2", "NUL"}},
  };
  for (const auto& b : bad) {
    const auto what = expect_error<invalid_argument>([&] { multi_lock(db, b.set); }, {}, b.label);
    for (const auto& fragment : b.says)
      EXPECT_NE(what.find(fragment), std::string::npos)
          << b.label << ": the message should contain '" << fragment << "': " << what;
  }
  for (const auto ttl : {0ms, -1ms, std::chrono::milliseconds(std::chrono::hours(24 * 366))}) {
    expect_error<invalid_argument>([&] { multi_lock(db, {"a", "b"}, opts(ttl)); }, {"ttl"}, "ttl");
  }
  multi_lock_options long_owner;
  long_owner.owner = std::string(129, 'o');
  expect_error<invalid_argument>([&] { multi_lock(db, {"a", "b"}, long_owner); }, {"owner", "128 bytes"}, "owner");
  EXPECT_EQ(read_lock_state(db), before) << "a refused set changed the database (or drew a fence)";

  // The limit itself is fine, and so are names at the 255-byte limit.
  too_many.resize(multi_lock::max_names - 1);
  too_many.push_back(std::string(255, 'y'));
  multi_lock most(db, too_many);
  ASSERT_TRUE(most.try_lock());
  EXPECT_EQ(rows(db), static_cast<std::int64_t>(multi_lock::max_names) + 1) << "64 rows and the bystander's";
  most.unlock();
  EXPECT_EQ(rows(db), 1);
}

TEST_P(MultiLockTest, AWaiterWakesWhenTheLastBusyNameIsReleased) {
  auto db1 = open();
  auto db2 = open();
  auto observer = open();
  table_lock_options holder;
  holder.owner = "holder";
  table_lock a(db1, "a", holder), b(db1, "b", holder);
  a.lock();
  b.lock();
  multi_lock set(db2, {"a", "b"});
  std::atomic<bool> all_released{false};
  auto waiter = std::async(std::launch::async, [&] {
    set.lock();
    const bool early = !all_released.load();
    set.unlock();
    return !early;
  });
  std::this_thread::sleep_for(200ms);
  a.unlock();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(waiter.wait_for(0ms), std::future_status::timeout) << "b is still held";
  EXPECT_FALSE(column(observer, "a", "owner_token").has_value()) << "the waiter does not hold a meanwhile";
  const auto start = clock_type::now();
  all_released = true;
  b.unlock();
  ASSERT_EQ(waiter.wait_for(scaled(5s)), std::future_status::ready);
  EXPECT_TRUE(waiter.get()) << "got the set while b was held";
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
  std::printf("[ info ] %s: the set was granted %lld ms after its last busy name was released\n",
              GetParam().name.c_str(), static_cast<long long>(took.count()));
}

TEST_P(MultiLockTest, AReleaseOfAnyNameWakesTheSetsWaitersWhereTheDriverCanListen) {
  auto db = open();
  auto& hub = detail::database_access::impl(db).wakeups();
  for (const auto& n : {"m1", "m2"}) hub.join(n);
  if (GetParam().dialect == dialect_kind::postgresql && !GetParam().transaction_pooler) {
    EXPECT_TRUE(eventually([&] { return hub.announced("m1") && hub.announced("m2"); }, 5s)) << "never registered";
  }
  const auto t1 = hub.ticket("m1"), t2 = hub.ticket("m2");
  if (GetParam().dialect != dialect_kind::postgresql || GetParam().transaction_pooler) {
    EXPECT_FALSE(t1.has_value() || t2.has_value()) << "only PostgreSQL has NOTIFY: others poll";
  } else {
    ASSERT_TRUE(t1 && t2) << "the listener did not start";
    auto other = open();
    table_lock lock(other, "m2");
    ASSERT_TRUE(lock.try_lock());
    lock.unlock();
    const auto start = clock_type::now();
    hub.wait_any({{"m1", *t1}, {"m2", *t2}}, clock_type::now() + 5s);
    EXPECT_LT(clock_type::now() - start, 4s) << "the release of m2 did not wake a waiter on {m1, m2}";
    EXPECT_NE(hub.ticket("m2"), t2);
    EXPECT_EQ(hub.ticket("m1"), t1);
  }
  for (const auto& n : {"m1", "m2"}) hub.leave(n);
}

TEST_P(MultiLockTest, LosingAnyNameSignalsTheSetOnceAndReleaseGivesBackTheRest) {
  auto db = open();
  std::atomic<int> lost{0};
  auto o = opts(scaled(300ms), true);  // renewals every 100 ms find the deleted row quickly
  o.on_lost = [&] { ++lost; };
  multi_lock set(db, {"a", "b", "c"}, o);
  ASSERT_TRUE(set.try_lock());
  const auto token = set.lost_token();
  EXPECT_FALSE(token.stop_requested());
  sql(db, "DELETE FROM " + table_ + " WHERE resource IN ('b', 'c')");  // an operator's force release
  EXPECT_TRUE(eventually([&] { return token.stop_requested(); }, scaled(3s))) << "no loss signal";
  EXPECT_TRUE(eventually([&] { return lost.load() > 0; }, scaled(3s)));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(lost.load(), 1) << "on_lost runs once for the set, though two names were lost";
  EXPECT_FALSE(set.holds());
  EXPECT_THROW(set.fences(), not_held);
  EXPECT_THROW(set.release(), not_held);
  EXPECT_EQ(rows(db), 0) << "the release gave back a, the name still held";
  ASSERT_TRUE(set.try_lock()) << "a new hold after the lost one";
  EXPECT_FALSE(set.lost_token().stop_requested());
  set.unlock();
}

// Declares this thread's hold of `name` on `db` lost, as the watchdog does when it cannot confirm
// a lease in time — while the row, in this test, lives on (a renewal whose reply came too late).
void declare_lost(const database& db, const std::string& name) {
  auto& registry = detail::database_access::impl(db).registry();
  auto slot = registry.pin(name, registry.session() + "/t:" + detail::current_thread_text(), detail::lock_rows_store());
  registry.mark_lost(*slot);
  registry.unpin(slot);
}

TEST_P(MultiLockTest, ARowOutlivingItsLostHoldIsNotBuiltOn) {
  auto db = open();
  multi_lock set(db, {"a", "b"}, opts(30s, false));
  ASSERT_TRUE(set.try_lock());
  const auto before = set.fences();
  declare_lost(db, "a");
  EXPECT_FALSE(set.holds());
  EXPECT_TRUE(set.lost_token().stop_requested());
  ASSERT_TRUE(set.try_lock()) << "the rows are ours, so the set is free for us";
  EXPECT_EQ(count_of(db, "a"), 1) << "the lost hold's row of a was re-entered instead of taken afresh";
  EXPECT_EQ(count_of(db, "b"), 1) << "b still counts the dead level of the lost hold";
  EXPECT_GT(set.fence("a"), before[0]) << "a fresh hold of a";
  set.release();
  EXPECT_EQ(rows(db), 0) << "one hold, one release: the rows must be gone";
  EXPECT_THROW(set.release(), not_held);
}

TEST_P(MultiLockTest, TheRuntimeRoleNeedsOnlyRowRights) {
  if (GetParam().dialect != dialect_kind::sqlite) {
    EXPECT_TRUE(GetParam().least_privilege()) << "the suite connects as the least-privilege role";
  }
  auto db = open();
  multi_lock set(db, {"p", "q", "r"});
  ASSERT_TRUE(set.try_lock()) << "advisory xact locks, fence sequence or trigger, upsert: all as the runtime role";
  EXPECT_GT(set.fence("p"), 0);
  set.unlock();
  EXPECT_EQ(rows(db), 0);
}

// A connection that counts the statements (round trips) sent through it.
class counting_connection final : public detail::connection {
 public:
  counting_connection(std::unique_ptr<detail::connection> inner, std::shared_ptr<std::atomic<int>> count)
      : inner_(std::move(inner)), count_(std::move(count)) {}
  detail::result exec(std::string_view sql, std::span<const detail::value> params) override {
    ++*count_;
    return inner_->exec(sql, params);
  }
  detail::result exec_direct(std::string_view sql) override {
    ++*count_;
    return inner_->exec_direct(sql);
  }
  bool broken() const noexcept override { return inner_->broken(); }
  int socket() const noexcept override { return inner_->socket(); }
  void abandon() noexcept override { inner_->abandon(); }
  std::string_view driver_name() const noexcept override { return inner_->driver_name(); }
  detail::notification_source* notifications() noexcept override { return inner_->notifications(); }

 private:
  std::unique_ptr<detail::connection> inner_;
  std::shared_ptr<std::atomic<int>> count_;
};

TEST_P(MultiLockTest, OneAttemptCostsTheRoundTripsOfItsDialectWhateverTheNumberOfNames) {
  auto count = std::make_shared<std::atomic<int>>(0);
  database_options o;
  o.table = table_;
  const auto spec = detail::parse_uri(GetParam().uri);
  database db = detail::database_access::wrap(std::make_shared<detail::database_impl>(
      spec, o, detail::database_seams{nullptr, [spec, count] {
                                        return std::make_unique<counting_connection>(
                                            detail::open_connection(spec, std::chrono::seconds(5)), count);
                                      }}));
  names ten;
  for (int i = 0; i < 10; ++i) ten.push_back("rt" + std::to_string(i));
  const auto trips = [&](const std::function<void()>& f) {
    const int before = count->load();
    f();
    return count->load() - before;
  };
  // Warm up: the first borrow opens a connection (its set-up statements are not counted here).
  table_lock warm(db, "warm");
  ASSERT_TRUE(warm.try_lock());
  warm.unlock();

  multi_lock set(db, ten, opts(30s, false));  // no renewal statements in between
  const int granted = trips([&] { ASSERT_TRUE(set.try_lock()); });
  const int released = trips([&] { set.unlock(); });
  auto other_db = open();
  table_lock busy(other_db, "rt9");
  ASSERT_TRUE(busy.try_lock());
  const int refused = trips([&] { EXPECT_FALSE(set.try_lock()); });
  busy.unlock();
  std::vector<std::unique_ptr<table_lock>> singles;
  for (const auto& n : ten)
    singles.push_back(std::make_unique<table_lock>(db, n, table_lock_options{.ttl = 30s, .auto_renew = false}));
  const int sequential = trips([&] {
    for (auto& l : singles) ASSERT_TRUE(l->try_lock());
  });
  for (auto& l : singles) l->unlock();
  std::printf(
      "[ info ] %s: 10-name multi_lock: %d round trips granted, %d refused, %d to release; "
      "10 table_locks: %d\n",
      GetParam().name.c_str(), granted, refused, released, sequential);
  switch (GetParam().dialect) {
    case dialect_kind::postgresql:
      EXPECT_EQ(granted, 3) << "BEGIN, the statement, COMMIT";
      EXPECT_EQ(refused, 3) << "BEGIN, the statement, ROLLBACK";
      EXPECT_EQ(sequential, 10);
      break;
    case dialect_kind::mysql:
      EXPECT_EQ(granted, 4) << "START TRANSACTION, the upsert, the read-back, COMMIT";
      EXPECT_LE(refused, 4) << "START TRANSACTION, the upsert, ROLLBACK (+ the read-back when a part was granted)";
      EXPECT_EQ(sequential, 20) << "each table_lock: the upsert and its read-back";
      break;
    case dialect_kind::sqlite:
      EXPECT_EQ(granted, 1) << "one statement";
      EXPECT_EQ(refused, 1);
      EXPECT_EQ(sequential, 10);
      break;
  }
  EXPECT_EQ(released, 10) << "one release statement per name";
}

INSTANTIATE_TEST_SUITE_P(AllTargets, MultiLockTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

// ---- with a server: grants slowed by a trigger, deadlock victims

class MultiLockServerTest : public MultiLockTest {};

TEST_P(MultiLockServerTest, AGrantThatArrivesAfterItsLeaseIsUndoneAndReportedFalse) {
  // Every inserted row of the lock table sleeps 200 ms before it commits: a set of two comes back
  // at least 400 ms after it was sent, past its 300 ms lease.
  pause_inserts_into(table_, "0.2");
  auto db = open();
  multi_lock late(db, {"a", "b"}, opts(300ms, false));
  const auto start = clock_type::now();
  EXPECT_FALSE(late.try_lock()) << "a grant read 400 ms after it was sent cannot still hold a 300 ms lease";
  EXPECT_GE(clock_type::now() - start, 400ms) << "the trigger did not pause the grant";
  EXPECT_FALSE(late.holds());
  EXPECT_EQ(rows(db), 0) << "the late grant's rows are deleted, not left to expire";
  EXPECT_THROW(late.release(), not_held);
}

TEST_P(MultiLockServerTest, ADeadlockVictimIsNotAcquiredAndHoldsNothing) {
  // Another transaction holds what the set's attempt needs for its second name and then asks for
  // what the attempt holds for its first: a cycle, which the server breaks by rolling one back.
  // The attempt is meant to be the victim: on InnoDB the other transaction has changed more rows,
  // so the attempt is the smaller one to roll back; on PostgreSQL the attempt waited first, so its
  // own deadlock check (once, deadlock_timeout = 1 s after it began to wait) finds the cycle — if
  // the other transaction asked by then. On a loaded machine it may ask later (CI's sanitizer run
  // did): the attempt's one check finds no cycle, the other's does, and the other is the victim.
  // Such a round checks that the attempt then gets the set, and the scenario runs again.
  auto db = open();
  auto& impl = detail::database_access::impl(db);
  auto other = impl.borrow();
  constexpr int kRounds = 4;
  for (int round = 1; round <= kRounds; ++round) {
    std::string first = "a", second, take_first;
    // The key every acquire of a name takes first (PostgreSQL).
    const auto key = [](const std::string& name) { return detail::pg_acquire_key("CAST('" + name + "' AS text)"); };
    if (GetParam().dialect == dialect_kind::postgresql) {
      // The keys are per name, not per table: names of their own, or the same test running at once
      // for another driver on the same server would queue on these keys too (and did, in CI).
      first = unique_name("a");
      second = unique_name("b");  // sorts after `first`: the attempt takes `first` and then waits
      other->exec_direct("BEGIN");
      other->exec_direct("SELECT pg_advisory_xact_lock(" + key(second) + ")");
      take_first = "SELECT pg_advisory_xact_lock(" + key(first) + ")";
    } else {
      const std::string scratch = unique_name("scratch");
      auto owner = open_owner();
      sql(owner, "CREATE TABLE " + scratch + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
      for (int i = 0; i < 50; ++i) sql(owner, "INSERT INTO " + scratch + " (id, v) VALUES ($1, 0)", {std::int64_t{i}});
      const std::string prefix = "old" + std::to_string(round) + "-";
      insert_rows(db, {.prefix = prefix, .count = 1, .expires_in = -60s});  // an expired row: free to take over
      second = prefix + "1";
      other->exec_direct("START TRANSACTION");
      other->exec_direct("UPDATE " + scratch + " SET v = v + 1");  // 50 rows: the heavier transaction
      other->exec_direct("SELECT resource FROM " + table_ + " WHERE resource = '" + second + "' FOR UPDATE");
      take_first = "SELECT resource FROM " + table_ + " WHERE resource = '" + first + "' FOR UPDATE";
    }
    const auto before = read_lock_state(db);
    multi_lock set(db, {second, first});
    auto attempt = std::async(std::launch::async, [&] { return set.try_lock(); });
    // Until the attempt holds what it needs for `first` and waits for `second`. PostgreSQL shows the
    // wait in pg_locks (a fixed 300 ms sleep was too short under the sanitizers on a loaded
    // machine), the key of `second` split in two 32-bit halves; InnoDB's lock waits need the
    // PROCESS privilege to see, so there a scaled sleep.
    if (GetParam().dialect == dialect_kind::postgresql) {
      const std::string waiting = "SELECT COUNT(*) FROM pg_locks, (SELECT " + key(second) +
                                  " AS k) AS w WHERE locktype = 'advisory' AND NOT granted"
                                  " AND CAST(classid AS bigint) = (w.k >> 32) & 4294967295"
                                  " AND CAST(objid AS bigint) = w.k & 4294967295";
      const auto until = std::chrono::steady_clock::now() + scaled(10s);
      while (sql(db, waiting).rows.at(0).at(0) == std::optional<std::string>("0") &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(20ms);
    } else {
      std::this_thread::sleep_for(scaled(300ms));
    }
    std::string other_failed;
    try {
      other->exec_direct(take_first);
    } catch (const backend_error& e) {
      other_failed = e.what();
    }
    ASSERT_EQ(attempt.wait_for(scaled(10s)), std::future_status::ready);
    const bool got = attempt.get();
    other->exec_direct("ROLLBACK");
    if (!other_failed.empty() && GetParam().dialect == dialect_kind::postgresql && round < kRounds) {
      // The server picked the other transaction (see above): the attempt waited on and got the set.
      EXPECT_TRUE(got) << "the survivor of the deadlock did not get the set";
      if (got) set.unlock();
      continue;
    }
    EXPECT_EQ(other_failed, "") << "the server chose the other transaction as the victim in every round";
    EXPECT_FALSE(got) << "the deadlock victim's attempt is a refusal, not an error";
    EXPECT_FALSE(set.holds());
    EXPECT_EQ(read_lock_state(db).lock_rows, before.lock_rows) << "the victim took nothing";
    EXPECT_TRUE(set.try_lock()) << "and the next attempt succeeds";
    set.unlock();
    return;
  }
}

INSTANTIATE_TEST_SUITE_P(ServerTargets, MultiLockServerTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

// ---- real processes

class MultiLockProcessTest : public MultiLockTest {};

TEST_P(MultiLockProcessTest, ProcessesOnOverlappingSetsNeverSeeAPartialSetNorLoseAnUpdate) {
  // Five names, four processes, each locking three of them (overlapping, listed in a different
  // order by each, shuffled every round). Under the set, a process checks through the lock table
  // that it holds every name of it — a partial grant would show — marks each name's counter row
  // as inside (another holder of a name would find the mark), and increments each counter by a
  // read, a pause and a write, which loses updates without mutual exclusion.
  constexpr int kProcesses = 4;
  constexpr int kRounds = 25;
  constexpr int kNames = 5;
  const std::string counters = unique_name("counters");
  {
    auto db = open_owner();
    sql(db, "CREATE TABLE " + counters + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL, inside INTEGER NOT NULL)");
    for (int i = 0; i < kNames; ++i)
      sql(db, "INSERT INTO " + counters + " (id, v, inside) VALUES ($1, 0, 0)", {std::int64_t{i}});
  }
  const auto members = [](int p) { return std::vector<int>{p % kNames, (p + 1) % kNames, (p + 3) % kNames}; };
  process_group group;
  for (int p = 0; p < kProcesses; ++p) {
    group.spawn([&, p] {
      auto db = open();
      std::vector<int> ids = members(p);
      std::minstd_rand rng(static_cast<unsigned>(p + 1));
      const std::string me = std::to_string(::getpid());
      for (int round = 0; round < kRounds; ++round) {
        std::shuffle(ids.begin(), ids.end(), rng);
        names set_names;
        for (int id : ids) set_names.push_back("name" + std::to_string(id));
        multi_lock set(db, set_names);
        std::lock_guard guard(set);
        for (const auto& n : set_names) {
          const auto pid = sql(db, "SELECT holder_pid FROM " + table_ + " WHERE resource = $1", {n});
          if (pid.rows.size() != 1 || pid.rows[0].at(0) != me) return 3;  // a partial set
        }
        for (int id : ids) {
          const auto r = sql(db, "SELECT inside FROM " + counters + " WHERE id = $1", {std::int64_t{id}});
          if (r.rows.at(0).at(0) != "0") return 4;  // another holder of this name is inside
          sql(db, "UPDATE " + counters + " SET inside = $1 WHERE id = $2",
              {std::int64_t{::getpid()}, std::int64_t{id}});
        }
        for (int id : ids) {
          const auto v = std::stoll(
              sql(db, "SELECT v FROM " + counters + " WHERE id = $1", {std::int64_t{id}}).rows.at(0).at(0).value());
          std::this_thread::sleep_for(200us);
          sql(db, "UPDATE " + counters + " SET v = $1, inside = 0 WHERE id = $2",
              {std::int64_t{v + 1}, std::int64_t{id}});
        }
      }
      return 0;
    });
  }
  EXPECT_EQ(group.wait_all(std::chrono::seconds(240)), kProcesses)
      << "a process failed: 3 = it held a partial set, 4 = two holders of one name";
  auto db = open();
  for (int id = 0; id < kNames; ++id) {
    int expected = 0;
    for (int p = 0; p < kProcesses; ++p) {
      const auto m = members(p);
      expected += static_cast<int>(std::count(m.begin(), m.end(), id)) * kRounds;
    }
    EXPECT_EQ(sql(db, "SELECT v FROM " + counters + " WHERE id = $1", {std::int64_t{id}}).rows.at(0).at(0),
              std::to_string(expected))
        << "name" << id << ": lost updates";
  }
  EXPECT_EQ(rows(db), 0) << "every process released every name";
}

#ifdef SQLLOCK_CLI
// `sqllock run` with several --lock: one multi_lock, all or none, its names ordinary table locks.
TEST_P(MultiLockProcessTest, SqllockRunWithSeveralLocksHoldsThemAllWhileTheCommandRuns) {
  const auto dir = make_temp_dir("multi-cli");
  const auto flag = dir / "running";
  const auto stop = dir / "stop";
  const std::vector<std::string> base{SQLLOCK_CLI, "run", "--db", GetParam().uri, "--table", table_};
  auto with = [&](std::vector<std::string> extra) {
    auto argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  };
  program holder(with({"--lock", "b", "--lock", "a", "--lock", "c", "--", "/bin/sh", "-c",
                       "touch " + flag.string() + "; while [ ! -e " + stop.string() + " ]; do sleep 0.05; done"}),
                 dir);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(flag); }, scaled(10s))) << holder.err();
  auto db = open();
  const auto held = owners(db, {"a", "b", "c"});
  ASSERT_EQ(held.size(), 3u) << "every name is held while the command runs";
  EXPECT_EQ(column(db, "a", "holder_pid"), std::to_string(holder.pid()));
  // One of the names, alone or in another set, is refused (-n: exit 1); a disjoint set is not.
  auto refused = run_program(with({"--lock", "c", "-n", "--", "true"}), dir);
  EXPECT_EQ(refused.code, 1) << refused.err;
  refused = run_program(with({"--lock", "d", "--lock", "a", "-n", "--", "true"}), dir);
  EXPECT_EQ(refused.code, 1) << refused.err;
  EXPECT_NE(refused.err.find("at least one is held elsewhere"), std::string::npos) << refused.err;
  EXPECT_FALSE(column(db, "d", "owner_token").has_value()) << "the refused set took nothing";
  const auto free = run_program(with({"--lock", "d", "--lock", "e", "-n", "--", "true"}), dir);
  EXPECT_EQ(free.code, 0) << free.err;
  { std::ofstream(stop.string()).put('x'); }
  EXPECT_EQ(holder.wait(scaled(10s)), 0) << holder.err();
  EXPECT_EQ(rows(db), 0) << "released when the command exited";
  // Usage errors (exit 2): a name twice, several names with another kind.
  auto bad = run_program(with({"--lock", "a", "--lock", "a", "--", "true"}), dir);
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("twice"), std::string::npos) << bad.err;
  const std::string other_kind = GetParam().dialect == dialect_kind::postgresql ? "advisory" : "row";
  bad = run_program(with({"--kind", other_kind, "--lock", "a", "--lock", "b", "--", "true"}), dir);
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--kind table"), std::string::npos) << bad.err;
  EXPECT_EQ(rows(db), 0);
}
#endif

INSTANTIATE_TEST_SUITE_P(AllTargets, MultiLockProcessTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
