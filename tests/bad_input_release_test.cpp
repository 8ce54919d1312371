// Releasing what the caller does not hold, on every driver × dialect pair and every lock kind that
// has a release: unlock without lock, more unlocks than locks, the wrong mode, another handle,
// another thread, the same owner key on another handle. Each is not_held with a message saying
// why, changes no row and leaves the real holder holding; unlock() reports it to
// on_unlock_error instead of throwing. Row locks have no release; their misuse (re-entry) is
// invalid_argument.
#include <gtest/gtest.h>

#include <thread>

#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/table_lock.hpp"
#include "support/bad_input.hpp"
#include "support/expect_error.hpp"
#include "support/fresh_database.hpp"
#include "support/lock_fixture.hpp"
#include "support/session_lock_fixture.hpp"

namespace sqllock::test {
namespace {

// table_lock_options or session_lock_options whose unlock errors are collected in `errors`.
template <class Options>
Options collecting(std::vector<std::string>& errors, std::string owner = {}) {
  Options o;
  o.owner = std::move(owner);
  o.on_unlock_error = [&errors](const std::exception& e) {
    errors.push_back((dynamic_cast<const not_held*>(&e) ? "not_held: " : "other: ") + std::string(e.what()));
  };
  return o;
}

class BadInputReleaseTest : public LockTableTest {
 protected:
  // Unlock without lock and more unlocks than locks, for one kind of lock object.
  template <class Lock, class Options>
  void over_release(const std::string& kind) {
    SCOPED_TRACE(kind);
    auto db = open();
    std::vector<std::string> errors;
    // Advisory and named locks are server-wide, and this test runs on another driver of the same
    // server at the same time: every name here is unique to this run.
    const std::string over = unique_name("over"), quoted = "'" + over + "'";
    Lock l(db, over, collecting<Options>(errors));
    const std::initializer_list<std::string_view> says = {quoted, "not held by the caller", "more unlocks than locks"};
    auto before = read_lock_state(db);
    expect_error<not_held>([&] { l.release(); }, says, "release without lock");
    EXPECT_EQ(read_lock_state(db), before);

    l.lock();
    l.lock();
    l.release();
    l.release();
    before = read_lock_state(db);
    expect_error<not_held>([&] { l.release(); }, says, "a third release after two locks");
    l.unlock();  // never throws: the error goes to on_unlock_error
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].rfind("not_held: ", 0), 0u) << errors[0];
    EXPECT_EQ(read_lock_state(db), before);
    EXPECT_TRUE(l.try_lock()) << "the object still works";
    l.release();
  }

  // A lock held (twice) by one owner, released by others.
  template <class Lock, class Options>
  void release_by_others(const std::string& kind) {
    SCOPED_TRACE(kind);
    auto db1 = open();
    auto db2 = open();
    std::vector<std::string> errors;
    const std::string mine_name = unique_name("mine"), mine_quoted = "'" + mine_name + "'";
    const std::string keyed_name = unique_name("keyed"), keyed_quoted = "'" + keyed_name + "'";
    Lock mine(db1, mine_name, collecting<Options>(errors));
    mine.lock();
    mine.lock();
    Lock keyed(db1, keyed_name, collecting<Options>(errors, "shared-key"));
    keyed.lock();
    const auto before = read_lock_state(db1);

    Lock theirs(db2, mine_name, collecting<Options>(errors));
    expect_error<not_held>([&] { theirs.release(); }, {mine_quoted, "not held by the caller"}, "another handle");
    theirs.unlock();
    EXPECT_EQ(errors.size(), 1u) << "unlock() reported it instead of throwing";
    std::thread([&] {
      expect_error<not_held>([&] { mine.release(); }, {mine_quoted, "calling thread", "owner"},
                             "another thread of the holding object");
    }).join();
    // Owner keys are scoped to their handle: the same key elsewhere is another owner.
    Lock same_key(db2, keyed_name, collecting<Options>(errors, "shared-key"));
    expect_error<not_held>([&] { same_key.release(); }, {keyed_quoted, "not held by the caller"},
                           "the same owner key on another handle");

    EXPECT_EQ(read_lock_state(db1), before) << "no row changed";
    EXPECT_TRUE(mine.holds());
    EXPECT_TRUE(keyed.holds());
    EXPECT_FALSE(theirs.try_lock()) << "still held by its owner";
    EXPECT_FALSE(same_key.try_lock()) << "still held by its owner";
    mine.release();
    mine.release();
    keyed.release();
    EXPECT_TRUE(theirs.try_lock()) << "free once the owner released it";
    theirs.release();
  }
};

TEST_P(BadInputReleaseTest, OverReleaseIsNotHeldAndChangesNoRow) {
  over_release<table_lock, table_lock_options>("table_lock");
  if (GetParam().dialect == dialect_kind::postgresql)
    over_release<advisory_lock, session_lock_options>("advisory_lock");
  if (GetParam().dialect == dialect_kind::mysql) over_release<named_lock, session_lock_options>("named_lock");
}

TEST_P(BadInputReleaseTest, ReleaseByAnotherOwnerIsNotHeldAndLeavesTheHolderHolding) {
  release_by_others<table_lock, table_lock_options>("table_lock");
  if (GetParam().dialect == dialect_kind::postgresql)
    release_by_others<advisory_lock, session_lock_options>("advisory_lock");
  if (GetParam().dialect == dialect_kind::mysql) release_by_others<named_lock, session_lock_options>("named_lock");
}

// An advisory lock held in one mode and released in the other: the message must say so, not
// blame another thread. PostgreSQL targets only (advisory locks are PostgreSQL's).
class BadInputAdvisoryReleaseTest : public BadInputReleaseTest {};

TEST_P(BadInputAdvisoryReleaseTest, ReleasingTheWrongModeIsNotHeld) {
  auto db = open();
  std::vector<std::string> errors;
  advisory_lock l(db, "modes", collecting<session_lock_options>(errors));
  l.lock();
  expect_error<not_held>([&] { l.release_shared(); }, {"shared advisory lock 'modes'", "exclusive"},
                         "release_shared while holding exclusive");
  EXPECT_TRUE(l.holds());
  l.release();
  l.lock_shared();
  expect_error<not_held>([&] { l.release(); }, {"advisory lock 'modes'", "shared"}, "release while holding shared");
  EXPECT_TRUE(l.holds_shared());
  l.release_shared();
}

TEST_P(BadInputReleaseTest, RowLockReentryIsInvalidArgument) {
  auto db = open();
  if (!supports_row_locks(db)) {
    expect_error<not_supported>([&] { with_row_lock(db, "outer", [](row_lock_tx&) {}); }, {"row locks", "table_lock"},
                                "with_row_lock on SQLite");
    return;
  }
  bool inner_ran = false;
  std::string message;
  with_row_lock(db, "outer", [&](row_lock_tx&) {
    message = expect_error<invalid_argument>(
        [&] { with_row_lock(db, "outer", [&](row_lock_tx&) { inner_ran = true; }); },
        {"'outer'", "already held by this thread", "not re-entrant"}, "nested with_row_lock");
  });
  EXPECT_FALSE(inner_ran);
  EXPECT_FALSE(message.empty());
  EXPECT_TRUE(try_with_row_lock(db, "outer", [](row_lock_tx&) {})) << "the outer lock ended normally";
}

INSTANTIATE_TEST_SUITE_P(bad_input, BadInputReleaseTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(bad_input, BadInputAdvisoryReleaseTest,
                         ::testing::ValuesIn(targets_of(dialect_kind::postgresql)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
