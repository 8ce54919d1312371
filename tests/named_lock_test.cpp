// What only named_lock (GET_LOCK) does on MySQL/MariaDB, over Connector/C++ and SOCI: the server
// name mapping and a session killed during a wait. The contract every lock kind shares, and
// not_supported elsewhere, are tested once for all kinds in tests/contract/.
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
  for (const std::string& name :
       std::vector<std::string>{"job", "A", "a", "Grüße, 世界 🙂", std::string(255, 'x')}) {
    const auto mapped = named_lock_server_name(name);
    EXPECT_EQ(mapped.size(), 64u);
    EXPECT_EQ(mapped.rfind("sqllock:", 0), 0u);
    EXPECT_EQ(scalar(db, "SELECT CONCAT('sqllock:', LEFT(SHA2($1, 256), 56))", {name}), mapped) << name;
  }
  EXPECT_EQ(named_lock_server_name("job"), "sqllock:5e8c9902207afaeb7120430c585a445f21e92932081d64bc99f80e49");
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

// Bad names every kind shares: tests/contract/.
TEST_P(NamedLockTest, BadOptionsAreRejected) {
  auto db = open();
  EXPECT_THROW(named_lock_server_name(""), invalid_argument);
  named_lock_options o;
  o.keepalive = 5ms;
  EXPECT_THROW(named_lock(db, "x", o), invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(MySQL, NamedLockTest, ::testing::ValuesIn(targets_of(dialect_kind::mysql)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
