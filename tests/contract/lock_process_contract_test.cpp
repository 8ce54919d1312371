// The lock contract with real concurrent processes, for every lock kind on every target that has
// it (support/lock_kinds.hpp): mutual exclusion, and how soon a SIGKILLed holder's lock is free
// (after its lease for leased kinds, at once for the others). What only one kind does with
// processes (a fork under a pinned session, never-seen row names) stays in that kind's file.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <thread>

#include "contract/contract_fixture.hpp"
#include "support/processes.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

class LockProcessContract : public LockContractTest {};

// Hooks for make_holder's hold() that run `body` under the lock and nothing else.
hold_hooks only(std::function<void(lock_section&)> body) {
  return {std::move(body), [] {}, [](std::int64_t) {}};
}

TEST_P(LockProcessContract, FourProcessesIncrementACounterWithoutLosingAnUpdate) {
  constexpr int kProcesses = 4;
  constexpr int kRounds = 50;
  const std::string counter = unique_name("counter");
  const std::string name = unique_name("counter_lock");
  {
    auto db = open_owner();  // the runtime role may not create tables
    sql(db, "CREATE TABLE " + counter + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
    sql(db, "INSERT INTO " + counter + " (id, v) VALUES (1, 0)");
  }
  process_group group;
  for (int p = 0; p < kProcesses; ++p) {
    group.spawn([&] {
      auto db = open();  // each process has its own handle, sessions and connections
      for (int i = 0; i < kRounds; ++i) {
        const bool ran = kind().run(db, name, wait_forever{}, [&](lock_section& s) {
          // Read, pause, write — in the lock's transaction for the kinds that have one: without
          // mutual exclusion (or with a snapshot older than the lock) increments get lost.
          const auto v = std::stoll(s.exec("SELECT v FROM " + counter + " WHERE id = 1").rows.at(0).at(0).value());
          std::this_thread::sleep_for(200us);
          s.exec("UPDATE " + counter + " SET v = $1 WHERE id = 1", {std::int64_t{v + 1}});
        });
        if (!ran) return 2;
      }
      return 0;
    });
  }
  EXPECT_EQ(group.wait_all(), kProcesses);
  auto db = open();
  EXPECT_EQ(sql(db, "SELECT v FROM " + counter + " WHERE id = 1").rows.at(0).at(0),
            std::to_string(kProcesses * kRounds));
  EXPECT_EQ(lock_rows(db), 0) << "no lock row is left behind (row and session locks never write one)";
  EXPECT_FALSE(kind().shown_held(db, name)) << "every process released the lock";
  EXPECT_TRUE(kind().take(db, name, std::monostate{})) << "every process released the lock";
}

TEST_P(LockProcessContract, AKilledHoldersLockIsFreeAtOnceOrAfterItsLease) {
  // The holder process takes the lock (a leased kind with a 1 s lease), writes in the section —
  // inside the lock's transaction for the kinds that have one — and sends its fence (-1: none)
  // through a pipe; then it sleeps until it is killed.
  constexpr auto ttl = 1s;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const std::string name = fresh("crashy");
  const std::string data = unique_name("data");
  {
    auto db = open_owner();  // the runtime role may not create tables
    sql(db, "CREATE TABLE " + data + " (id INTEGER PRIMARY KEY)");
  }
  process_group group;
  const pid_t holder = group.spawn([&] {
    ::close(ready[0]);
    auto db = open();
    lock_settings s;
    if (kind().can.leased) s.ttl = ttl;
    const auto h = make_holder(kind(), db, name, s);
    const auto held = h->hold(60s, only([&](lock_section& section) {
                                if (section.transactional()) section.exec("INSERT INTO " + data + " (id) VALUES (1)");
                                const std::int64_t fence = section.fence();
                                (void)!::write(ready[1], &fence, sizeof fence);
                                std::this_thread::sleep_for(60s);  // killed long before
                              }));
    return held ? 0 : 2;
  });
  ::close(ready[1]);  // a holder that fails before taking the lock closes the pipe: EOF
  group.start();
  std::int64_t old_fence = -1;
  ASSERT_EQ(::read(ready[0], &old_fence, sizeof old_fence), static_cast<ssize_t>(sizeof old_fence))
      << "the holder did not take the lock";
  ::close(ready[0]);
  auto db = open();
  EXPECT_FALSE(kind().take(db, name, std::monostate{})) << "another owner is refused while the holder lives";

  ::kill(holder, SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  const auto taker = make_holder(kind(), db, name);
  std::chrono::steady_clock::duration took{};
  std::int64_t new_fence = -1;
  const auto released = taker->hold(scaled(10s), only([&](lock_section& section) {
                                      took = std::chrono::steady_clock::now() - killed;
                                      new_fence = section.fence();
                                    }));
  ASSERT_TRUE(released) << "the dead holder's lock was never freed";
  EXPECT_EQ(*released, release_result::ok);
  const auto bound = (kind().can.leased ? std::chrono::milliseconds(ttl) : 0ms) + kind().can.freed_after_holder_killed;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took);
  EXPECT_LT(ms, scaled(bound)) << (kind().can.leased ? "free within the ttl + "
                                                     : "free when the holder's session or transaction ended: ")
                               << kind().can.freed_after_holder_killed.count() << " ms, not by a timeout";
  std::printf("[ info ] %s acquired %lld ms after SIGKILL of the holder\n", kind().name.c_str(),
              static_cast<long long>(ms.count()));
  if (kind().can.fenced) {
    EXPECT_GT(new_fence, old_fence) << "the next holder's fence is above the killed one's";
  }
  EXPECT_EQ(sql(db, "SELECT COUNT(*) FROM " + data).rows.at(0).at(0), "0") << "the dead holder's write rolled back";
  EXPECT_EQ(group.wait_all(), 0) << "the holder was killed, not ended";
}

// Every kind on every target: table_lock on all pairs and through PgBouncer, the session locks on
// their servers, row locks on the servers and through PgBouncer, the transaction-level advisory
// lock on PostgreSQL. Not that one through PgBouncer: each holder keeps one of the pooler's two
// server connections for its transaction while its section needs another for the counter, so four
// processes starve the pooler (pgbouncer_test covers xact locks across processes there).
const auto process_cases = [] {
  auto cases = lock_cases(all_targets());
  for (auto& c : lock_cases(pgbouncer_targets(), [](const lock_kind& k) { return k.name != "advisory_xact_lock"; }))
    cases.push_back(c);
  return cases;
}();
SQLLOCK_CONTRACT_CASES(AllTargets, LockProcessContract, process_cases);

}  // namespace
}  // namespace sqllock::test
