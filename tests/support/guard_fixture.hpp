// The fixture of the guard suites (guard_test: guard() in C++; guard_sql_test: the SQL guard): one
// leased kind on one target (contract/contract_fixture.hpp), a data table to write to, the
// application's connection through the target's client library (support/app_sessions.hpp), and
// the takeover scenario both suites check their guard by.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "contract/contract_fixture.hpp"
#include "sqllock/error.hpp"
#include "support/app_sessions.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {

class GuardFixture : public LockContractTest {
 protected:
  using clock_type = std::chrono::steady_clock;

  void SetUp() override {
    LockContractTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    data_ = unique_name("data");
    sql(open_owner(), "CREATE TABLE " + data_ + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
  }

  // A new application connection to the target's database, through its client library.
  std::unique_ptr<app_session> app() const { return connect_app(where().name, where().uri); }

  std::string insert(int id) const {
    return "INSERT INTO " + data_ + " (id, v) VALUES (" + std::to_string(id) + ", 0)";
  }
  std::int64_t data_rows() const {
    return std::stoll(sql(open(), "SELECT COUNT(*) FROM " + data_).rows.at(0).at(0).value());
  }

  static lock_settings lease(std::chrono::milliseconds ttl, bool renewed) {
    lock_settings s;
    s.ttl = ttl;
    s.auto_renew = renewed;
    return s;
  }

  // What happened to another owner's attempt made once a's lease had run out, while a's
  // transaction stayed open for a while: whether it was granted before the commit, and whether and
  // when at all.
  struct takeover {
    bool before_commit = false;
    bool granted = false;
    clock_type::time_point granted_at{};
    clock_type::time_point committed_at{};
    std::string error;
  };
  // a holds the lock (a lease of 600 ms, not renewed); its transaction runs `guard` first (none:
  // the unguarded control), stays open past the lease while b tries to take the lock, then writes
  // a row and commits.
  takeover take_over_during(const std::function<void(app_session&, const lock_object&)>& guard) {
    using namespace std::chrono_literals;
    auto db1 = open();
    auto db2 = open();
    const auto name = fresh("takeover");
    const auto ttl = scaled(600ms);
    auto a = make(db1, name, lease(ttl, false));
    auto b = make(db2, name);
    EXPECT_TRUE(a->try_lock());
    auto tx = app();
    tx->begin();
    if (guard) guard(*tx, *a);
    std::this_thread::sleep_for(ttl + scaled(200ms));  // a's lease ran out, by every clock
    takeover out;
    std::atomic<bool> granted{false};
    std::thread contender([&] {
      try {
        if (b->try_lock_for(scaled(20s))) {
          out.granted_at = clock_type::now();
          granted = true;
          b->release();  // by the thread that holds it
        }
      } catch (const std::exception& e) {
        out.error = e.what();
      }
    });
    // A grant takes a few milliseconds once possible: the control's comes at once, and 400 ms
    // without one show the guarded transaction holding it back.
    const auto window_end = clock_type::now() + scaled(400ms);
    while (!granted.load() && clock_type::now() < window_end) std::this_thread::sleep_for(5ms);
    out.before_commit = granted.load();
    tx->exec(insert(1));
    out.committed_at = clock_type::now();
    tx->commit();
    contender.join();
    out.granted = granted.load();
    EXPECT_THROW(a->release(), not_held) << "a's lease ran out";
    EXPECT_EQ(data_rows(), 1);
    return out;
  }

  // The two verdicts on take_over_during: guarded, the other owner is granted only after the
  // commit; unguarded (the control), while the transaction is open.
  static void expect_held_back(const takeover& t) {
    EXPECT_EQ(t.error, "");
    EXPECT_FALSE(t.before_commit) << "granted while the guarded transaction was open";
    ASSERT_TRUE(t.granted) << "never granted after the commit";
    EXPECT_GE(t.granted_at, t.committed_at);
  }
  static void expect_let_in(const takeover& t) {
    EXPECT_EQ(t.error, "");
    EXPECT_TRUE(t.before_commit);
  }

  std::string data_;
};

}  // namespace sqllock::test
