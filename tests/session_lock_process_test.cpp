// Session locks with real processes: advisory_lock on the PostgreSQL targets, named_lock on the
// MySQL/MariaDB targets. A holder whose session is killed from outside, and a fork. (Mutual
// exclusion on a shared counter, and a SIGKILLed holder's lock: tests/contract/, for every kind.)
#include <unistd.h>

#include <memory>
#include <thread>

#include "sqllock/advisory_lock.hpp"
#include "sqllock/named_lock.hpp"
#include "support/lock_kinds.hpp"
#include "support/processes.hpp"
#include "support/session_lock_fixture.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

// The session lock of the target's dialect, behind one interface.
class any_session_lock {
 public:
  any_session_lock(const database& db, const std::string& name, session_lock_options o = {}) {
    if (db.dialect() == dialect_kind::postgresql)
      advisory_ = std::make_unique<advisory_lock>(db, name, std::move(o));
    else
      named_ = std::make_unique<named_lock>(db, name, std::move(o));
  }
  void lock() { advisory_ ? advisory_->lock() : named_->lock(); }
  void unlock() { advisory_ ? advisory_->unlock() : named_->unlock(); }
  void release() { advisory_ ? advisory_->release() : named_->release(); }
  bool try_lock() { return advisory_ ? advisory_->try_lock() : named_->try_lock(); }
  bool try_lock_for(std::chrono::milliseconds d) {
    return advisory_ ? advisory_->try_lock_for(d) : named_->try_lock_for(d);
  }
  bool holds() const { return advisory_ ? advisory_->holds() : named_->holds(); }
  std::stop_token lost_token() const { return advisory_ ? advisory_->lost_token() : named_->lost_token(); }

 private:
  std::unique_ptr<advisory_lock> advisory_;
  std::unique_ptr<named_lock> named_;
};

class SessionLockProcessTest : public SessionLockTest {
 protected:
  // Ends the session that holds `name`, from another session (pg_terminate_backend / KILL).
  void kill_holder_session(const database& admin, const std::string& name) {
    session_lock_kind(admin.dialect()).kill_holder_session(admin, name);
  }
};

TEST_P(SessionLockProcessTest, KillingTheHoldersSessionSignalsTheHolderProcess) {
  // The holder process reports, through a pipe, how long after the kill its lost signal came.
  int ready[2];
  int go[2];
  int report[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(report), 0);
  const std::string name = unique_name("killed");
  process_group group;
  group.spawn([&] {
    auto db = open();
    session_lock_options o;
    o.keepalive = 500ms;
    any_session_lock lock(db, name, o);
    lock.lock();
    const auto token = lock.lost_token();
    (void)!::write(ready[1], "x", 1);
    char killed;
    if (::read(go[0], &killed, 1) != 1) return 2;  // the parent has just killed the session
    const long long ms = time_until([&] { return token.stop_requested(); }, 5s).count();
    (void)!::write(report[1], &ms, sizeof ms);
    return lock.holds() ? 3 : 0;
  });
  group.start();
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  auto admin = open();
  kill_holder_session(admin, name);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  long long ms = -1;
  ASSERT_EQ(::read(report[0], &ms, sizeof ms), static_cast<ssize_t>(sizeof ms));
  EXPECT_GE(ms, 0);
  EXPECT_LE(ms, scaled(1500ms).count()) << "lost within keepalive (500 ms) + 1 s";
  std::printf("[ info ] the holder saw its lost signal %lld ms after the kill\n", ms);
  EXPECT_EQ(group.wait_all(), 1);
  for (int fd : {ready[0], ready[1], go[0], go[1], report[0], report[1]}) ::close(fd);
}

TEST_P(SessionLockProcessTest, AForkedChildHoldsNoneOfItsParentsLocksAndLeavesThemAlone) {
  auto db = open();
  const std::string name = unique_name("fork");
  session_lock_options o;
  o.keepalive = 20ms;  // the keepalive thread is busy when the fork happens
  any_session_lock lock(db, name, o);
  lock.lock();
  std::this_thread::sleep_for(50ms);
  process_group group;
  group.spawn([&] {
    if (lock.holds()) return 2;
    try {
      lock.release();
      return 3;
    } catch (const not_held&) {
    }
    any_session_lock mine(db, name + "_child");  // the parent's handle works in the child
    if (!mine.try_lock()) return 4;
    mine.unlock();
    any_session_lock same(db, name);
    if (same.try_lock()) return 5;  // still the parent's
    return 0;                       // exits without destroying the parent's objects
  });
  EXPECT_EQ(group.wait_all(), 1);
  EXPECT_TRUE(lock.holds());
  auto other = open();
  any_session_lock probe(other, name);
  EXPECT_FALSE(probe.try_lock()) << "the child left the parent's session alone";
  std::this_thread::sleep_for(100ms);  // a few keepalive pings on the parent's session
  EXPECT_TRUE(lock.holds());
  lock.unlock();
  EXPECT_TRUE(probe.try_lock());
  probe.unlock();
}

INSTANTIATE_TEST_SUITE_P(SessionLocks, SessionLockProcessTest, ::testing::ValuesIn(session_lock_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
