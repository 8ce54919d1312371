// named_lock (GET_LOCK) on MySQL/MariaDB, over Connector/C++ and SOCI; not_supported elsewhere.
#include <atomic>
#include <mutex>
#include <thread>

#include "sqllock/error.hpp"
#include "sqllock/named_lock.hpp"
#include "support/lockable.hpp"
#include "support/session_lock_fixture.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

static_assert(std_wrappable<named_lock>);

class NamedLockTest : public SessionLockTest {
 protected:
  // The connection id holding `lock`'s name, or "" when it is free.
  std::string holder(const database& db, const named_lock& lock) const {
    return scalar(db, "SELECT IS_USED_LOCK($1)", {lock.server_name()});
  }
};

TEST_P(NamedLockTest, ServerNamesFollowTheDocumentedRule) {
  auto db = open();
  for (const std::string& name : std::vector<std::string>{"job", "A", "a", "Grüße, 世界 🙂", std::string(255, 'x')}) {
    const auto mapped = named_lock_server_name(name);
    EXPECT_EQ(mapped.size(), 64u);
    EXPECT_EQ(mapped.rfind("sqllock:", 0), 0u);
    EXPECT_EQ(scalar(db, "SELECT CONCAT('sqllock:', LEFT(SHA2($1, 256), 56))", {name}), mapped) << name;
  }
  EXPECT_EQ(named_lock_server_name("job"), "sqllock:5e8c9902207afaeb7120430c585a445f21e92932081d64bc99f80e49");
}

TEST_P(NamedLockTest, TryLockExcludesOtherSessions) {
  auto db1 = open();
  auto db2 = open();
  const auto name = unique_name("job");
  named_lock a(db1, name);
  named_lock b(db2, name);
  EXPECT_EQ(a.name(), name);
  ASSERT_TRUE(a.try_lock());
  EXPECT_TRUE(a.holds());
  EXPECT_NE(holder(db2, a), "");
  EXPECT_FALSE(b.try_lock());
  a.unlock();
  EXPECT_EQ(holder(db2, a), "");
  EXPECT_TRUE(b.try_lock());
  b.unlock();
}

TEST_P(NamedLockTest, NamesDifferingOnlyInCaseOrBeyond64CharactersAreDifferentLocks) {
  auto db1 = open();
  auto db2 = open();
  const auto base = unique_name("Case");
  named_lock upper(db1, base + "A");
  named_lock lower(db2, base + "a");
  ASSERT_TRUE(upper.try_lock());
  EXPECT_TRUE(lower.try_lock()) << "'A' and 'a' must not share a lock";
  upper.unlock();
  lower.unlock();
  const std::string long_prefix = base + std::string(100, 'x');
  named_lock long1(db1, long_prefix + "1");
  named_lock long2(db2, long_prefix + "2");
  ASSERT_TRUE(long1.try_lock());
  EXPECT_TRUE(long2.try_lock()) << "names sharing their first 64 characters stay distinct";
  long1.unlock();
  long2.unlock();
}

TEST_P(NamedLockTest, ReentryStacksLikeTheServerAndOverReleaseIsNotHeld) {
  auto db1 = open();
  auto db2 = open();
  const auto name = unique_name("re");
  std::vector<std::string> errors;
  named_lock_options o;
  o.on_unlock_error = [&](const std::exception& e) { errors.emplace_back(e.what()); };
  named_lock a(db1, name, o);
  named_lock b(db2, name);
  a.lock();
  ASSERT_TRUE(a.try_lock());
  EXPECT_EQ(a.count(), 2);
  a.unlock();
  EXPECT_FALSE(b.try_lock()) << "one of two levels is still held";
  a.unlock();
  EXPECT_TRUE(b.try_lock());
  b.unlock();
  EXPECT_THROW(a.release(), not_held);
  a.unlock();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("not held"), std::string::npos) << errors[0];
}

TEST_P(NamedLockTest, TwoObjectsInOneThreadShareTheSessionAndThreadsExclude) {
  auto db = open();
  const auto name = unique_name("share");
  named_lock a(db, name);
  named_lock b(db, name);
  ASSERT_TRUE(a.try_lock());
  ASSERT_TRUE(b.try_lock()) << "same owner, same session: the server counts a second level";
  std::thread([&] { EXPECT_FALSE(a.try_lock()) << "another thread is another owner"; }).join();
  b.unlock();
  EXPECT_NE(holder(db, a), "");
  a.unlock();
  EXPECT_EQ(holder(db, a), "");
}

TEST_P(NamedLockTest, TimedWaitsHonourTheDeadline) {
  auto db1 = open();
  auto db2 = open();
  const auto name = unique_name("timed");
  named_lock_options o;
  o.owner = "holder";
  named_lock a(db1, name, o);
  named_lock b(db2, name);
  a.lock();
  auto start = clock_type::now();
  EXPECT_FALSE(b.try_lock_for(300ms));
  auto took = clock_type::now() - start;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, scaled(1000ms));
  start = clock_type::now();
  EXPECT_FALSE(b.try_lock_until(std::chrono::system_clock::now() + 120ms));
  took = clock_type::now() - start;
  EXPECT_GE(took, 110ms);
  EXPECT_LT(took, scaled(800ms));

  std::thread releaser([&] {
    std::this_thread::sleep_for(150ms);
    a.unlock();
  });
  start = clock_type::now();
  EXPECT_TRUE(b.try_lock_for(5s));
  EXPECT_LT(clock_type::now() - start, scaled(2s));
  releaser.join();
  b.unlock();

  a.lock();
  std::thread releaser2([&] {
    std::this_thread::sleep_for(150ms);
    a.unlock();
  });
  b.lock();
  EXPECT_TRUE(b.holds());
  releaser2.join();
  b.unlock();
}

TEST_P(NamedLockTest, KillingTheHoldersSessionSignalsLostWithinKeepalive) {
  auto db = open();
  auto admin = open();
  const auto name = unique_name("kill");
  std::atomic<int> callbacks{0};
  named_lock_options o;
  o.keepalive = 500ms;
  o.on_lost = [&] { ++callbacks; };
  named_lock lock(db, name, o);
  lock.lock();
  const auto token = lock.lost_token();
  const auto id = holder(admin, lock);
  ASSERT_NE(id, "");
  sql(admin, "KILL " + id);
  const auto took = time_until([&] { return token.stop_requested(); }, 10s);
  EXPECT_LE(took, scaled(1500ms)) << "lost within keepalive + 1 s";
  EXPECT_LE(time_until([&] { return callbacks.load() == 1; }, 10s), scaled(1500ms)) << "on_lost runs once";
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(callbacks.load(), 1);
  EXPECT_FALSE(lock.holds());
  EXPECT_THROW(lock.release(), not_held);
  // The server frees a killed session's locks only once that session has ended, which may be a
  // moment after the client saw its connection close.
  ASSERT_TRUE(lock.try_lock_for(2s)) << "a new session for the next acquisition";
  EXPECT_FALSE(lock.lost_token().stop_requested());
  lock.unlock();
}

TEST_P(NamedLockTest, ASessionKilledDuringAWaitThrows) {
  auto db1 = open();
  auto db2 = open();
  auto admin = open();
  const auto name = unique_name("killwait");
  named_lock a(db1, name);
  named_lock b(db2, name);
  // The waiter's thread holds a second name on the same session, which tells its connection id.
  named_lock_options quiet;
  quiet.on_unlock_error = [](const std::exception&) {};
  named_lock marker(db2, name + "_marker", quiet);
  marker.lock();
  const auto waiter = holder(admin, marker);
  ASSERT_NE(waiter, "");
  a.lock();
  std::thread killer([&] {
    std::this_thread::sleep_for(300ms);
    sql(admin, "KILL " + waiter);
  });
  EXPECT_THROW(b.lock(), connection_error);
  killer.join();
  EXPECT_FALSE(b.holds());
  EXPECT_FALSE(marker.holds()) << "the session's other lock went with it";
  a.unlock();
  // The server ends the killed session's thread a moment after the client sees its connection
  // close: until then that thread may still be queued for the name, and be granted it briefly.
  EXPECT_TRUE(b.try_lock_for(2s)) << "the killed waiter's session kept the name";
  b.unlock();
}

TEST_P(NamedLockTest, DestroyingALockReleasesItsLevels) {
  auto db = open();
  auto other = open();
  const auto name = unique_name("destroy");
  {
    named_lock a(db, name);
    a.lock();
    a.lock();
  }
  named_lock b(other, name);
  EXPECT_TRUE(b.try_lock());
  b.unlock();
}

TEST_P(NamedLockTest, BadInputIsRejected) {
  auto db = open();
  EXPECT_THROW(named_lock(db, ""), invalid_argument);
  EXPECT_THROW(named_lock(db, std::string(256, 'x')), invalid_argument);
  EXPECT_THROW(named_lock(db, std::string("a\0b", 3)), invalid_argument);
  EXPECT_THROW(named_lock(db, "\xc3"), invalid_argument);
  EXPECT_THROW(named_lock_server_name(""), invalid_argument);
  named_lock_options o;
  o.keepalive = 5ms;
  EXPECT_THROW(named_lock(db, "x", o), invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(MySQL, NamedLockTest, ::testing::ValuesIn(targets_of(dialect_kind::mysql)),
                         [](const auto& info) { return info.param.name; });

class NamedLockUnsupportedTest : public SessionLockTest {};

TEST_P(NamedLockUnsupportedTest, SaysNotSupportedAndNamesTheAlternative) {
  auto db = open();
  try {
    named_lock lock(db, "x");
    FAIL() << "expected not_supported";
  } catch (const not_supported& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("MySQL"), std::string::npos) << what;
    EXPECT_NE(what.find(GetParam().dialect == dialect_kind::postgresql ? "advisory_lock" : "table_lock"),
              std::string::npos)
        << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Others, NamedLockUnsupportedTest, ::testing::ValuesIn(targets_of(dialect_kind::mysql, true)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
