// sqllock::fair_lock and sqllock::rw_lock on every driver × dialect pair: what only the queue kinds
// do (the contract suite, tests/contract/, covers what every lock kind does). Arrival order among
// threads and among real processes, places that outlive their ttl while renewed and drop out when
// their process dies, a waiter that lost its place, timeouts that leave the queue, readers and
// writers without starvation either way, re-entry, downgrade in place and the refused upgrade.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "core/handle/database_impl.hpp"
#include "core/lease/queue_store.hpp"
#include "sqllock/error.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/rw_lock.hpp"
#include "sqllock/status.hpp"
#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

class QueueLockTest : public LockTableTest {
 protected:
  // Entries in the queue for `name` (kind 'F' or 'R').
  std::int64_t entries(const database& db, const std::string& name, char kind) const {
    return std::stoll(sql(db, "SELECT COUNT(*) FROM " + table_ + "_queue WHERE resource = $1 AND kind = $2",
                          {name, std::string(1, kind)})
                          .rows.at(0)
                          .at(0)
                          .value());
  }
  // Waits (up to 10 s, scaled) until `name` has `n` entries of `kind`.
  bool await_entries(const database& db, const std::string& name, char kind, std::int64_t n) const {
    const auto until = clock_type::now() + scaled(10s);
    while (clock_type::now() < until) {
      if (entries(db, name, kind) == n) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
  // 25 rounds of: a holder of a new name (a writer) holds; a waiter in another thread waits with
  // `wait` (up to 10 s); up to 200 forced releases of the name's queue run back to back until the
  // waiter is served; then the holder releases. The waiter must get the lock, behind the holder.
  template <class Lock, class Wait>
  void expect_waiters_survive_forced_releases(queue_lock_kind kind, Wait wait) {
    constexpr int kRounds = 25;
    constexpr int kForcedReleases = 200;
    const char tag = kind == queue_lock_kind::fair ? 'F' : 'R';
    auto db = open();
    auto waiter_db = open();
    auto ops = open();
    for (int round = 0; round < kRounds; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      const std::string name = "forced-" + std::to_string(round);
      Lock holder(db, name);
      holder.lock();
      const auto held = holder.fence();
      std::atomic<bool> done{false};
      auto waiter = std::async(std::launch::async, [&] {
        Lock mine(waiter_db, name);
        const bool got = wait(mine);
        done = true;
        return got ? mine.fence() : std::int64_t{0};
      });
      ASSERT_TRUE(await_entries(db, name, tag, 2));
      for (int i = 0; i < kForcedReleases && !done; ++i) force_release_queue_entries(ops, name, kind);
      holder.unlock();  // its place is gone: the error goes to on_unlock_error
      std::int64_t fence = 0;
      EXPECT_NO_THROW(fence = waiter.get()) << "a forced release must not fail the wait";
      EXPECT_GT(fence, held) << "it got the lock, on a ticket behind the holder's";
    }
  }
  static fair_lock_options fair_ttl(std::chrono::milliseconds ttl) {
    fair_lock_options o;
    o.ttl = ttl;
    return o;
  }
};

// ---- fair_lock

TEST_P(QueueLockTest, FairLockExcludesAndItsFenceIncreases) {
  auto db = open();
  fair_lock a(db, "printer");
  fair_lock b(open(), "printer");
  ASSERT_TRUE(a.try_lock());
  EXPECT_TRUE(a.holds());
  const auto first = a.fence();
  EXPECT_FALSE(b.try_lock()) << "another owner while it is held";
  EXPECT_EQ(entries(db, "printer", 'F'), 1) << "the refused attempt gave its place back";
  a.unlock();
  EXPECT_FALSE(a.holds());
  EXPECT_EQ(entries(db, "printer", 'F'), 0);
  ASSERT_TRUE(b.try_lock());
  EXPECT_GT(b.fence(), first);
  b.unlock();
}

TEST_P(QueueLockTest, FairLockIsReentrantAndLeavesWithTheLastLevel) {
  auto db = open();
  fair_lock a(db, "re");
  a.lock();
  const auto fence = a.fence();
  ASSERT_TRUE(a.try_lock()) << "the owner again";
  EXPECT_EQ(a.fence(), fence) << "one place, one ticket";
  a.unlock();
  EXPECT_TRUE(a.holds());
  EXPECT_FALSE(fair_lock(open(), "re").try_lock());
  a.unlock();
  EXPECT_FALSE(a.holds());
  EXPECT_THROW(a.release(), not_held);
  EXPECT_EQ(entries(db, "re", 'F'), 0);
}

TEST_P(QueueLockTest, WaitersAreGrantedInArrivalOrder) {
  auto db = open();
  fair_lock holder(db, "fifo");
  holder.lock();
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::future<void>> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.push_back(std::async(std::launch::async, [&, i] {
      fair_lock mine(open(), "fifo");
      mine.lock();
      {
        std::lock_guard g(mu);
        order.push_back(i);
      }
      std::this_thread::sleep_for(10ms);
      mine.unlock();
    }));
    // The next waiter arrives only after this one's place is in the queue.
    ASSERT_TRUE(await_entries(db, "fifo", 'F', i + 2)) << "waiter " << i << " never queued";
  }
  holder.unlock();
  for (auto& w : waiters) w.get();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST_P(QueueLockTest, ATimedOutWaiterLeavesTheQueueAndBlocksNobody) {
  auto db = open();
  fair_lock holder(db, "t");
  holder.lock();
  fair_lock late(open(), "t");
  const auto start = clock_type::now();
  EXPECT_FALSE(late.try_lock_for(200ms));
  EXPECT_GE(clock_type::now() - start, 200ms);
  EXPECT_EQ(entries(db, "t", 'F'), 1) << "only the holder's place is left";
  holder.unlock();
  EXPECT_TRUE(fair_lock(open(), "t").try_lock()) << "nobody is ahead";
}

TEST_P(QueueLockTest, ALiveWaiterKeepsItsPlaceLongerThanItsTtl) {
  auto db = open();
  fair_lock holder(db, "long", fair_ttl(2s));
  holder.lock();
  auto first = std::async(std::launch::async, [&] {
    fair_lock mine(open(), "long", fair_ttl(300ms));  // renewed every 100 ms while it waits
    mine.lock();
    const auto fence = mine.fence();
    mine.unlock();
    return fence;
  });
  ASSERT_TRUE(await_entries(db, "long", 'F', 2));
  std::this_thread::sleep_for(1200ms);  // four ttls of the waiter
  fair_lock second(open(), "long");
  auto later = std::async(std::launch::async, [&] {
    second.lock();
    const auto fence = second.fence();
    second.unlock();
    return fence;
  });
  ASSERT_TRUE(await_entries(db, "long", 'F', 3));
  holder.unlock();
  const auto f1 = first.get();
  const auto f2 = later.get();
  EXPECT_LT(f1, f2) << "the waiter that came first held first";
}

TEST_P(QueueLockTest, AWaiterWhosePlaceWasDeletedQueuesAgainAndGetsTheLock) {
  auto db = open();
  fair_lock holder(db, "gone");
  holder.lock();
  auto waiter = std::async(std::launch::async, [&] {
    fair_lock mine(open(), "gone");
    return mine.try_lock_for(scaled(20s));
  });
  ASSERT_TRUE(await_entries(db, "gone", 'F', 2));
  // Its place deleted behind its back (as a forced release or an expiry would).
  sql(open_owner(), "DELETE FROM " + table_ + "_queue WHERE resource = 'gone' AND ticket > $1", {holder.fence()});
  std::this_thread::sleep_for(200ms);
  holder.unlock();
  EXPECT_TRUE(waiter.get()) << "it noticed, queued again and was served";
  EXPECT_EQ(entries(db, "gone", 'F'), 0);
}

// A waiter whose place an operator deletes (`sqllock release --force`) again and again while it
// waits: every deletion may land between a MySQL enqueue's write and its read-back. It queues
// again at the back each time and is served within its deadline; it never fails the wait. The
// forced release deletes the whole queue of the name, so the holder loses its place too.
TEST_P(QueueLockTest, AWaiterWhosePlaceIsForceReleasedQueuesAgainAtTheBack) {
  expect_waiters_survive_forced_releases<fair_lock>(queue_lock_kind::fair,
                                                    [](fair_lock& l) { return l.try_lock_for(10s); });
}

TEST_P(QueueLockTest, AReaderWhosePlaceIsForceReleasedQueuesAgainAtTheBack) {
  expect_waiters_survive_forced_releases<rw_lock>(queue_lock_kind::rw,
                                                  [](rw_lock& l) { return l.try_lock_shared_for(10s); });
}

TEST_P(QueueLockTest, AKilledWaiterDropsOutWithinItsLease) {
  // The child is forked before this process holds anything, so before the handle's renewal
  // threads exist: a fork while one of them holds a lock (a client library's, the allocator's)
  // leaves that lock held for ever in the child, which then never queues.
  process_group group;
  const pid_t child = group.spawn([&]() -> int {
    fair_lock mine(open(), "dead", fair_ttl(500ms));
    mine.lock();  // never returns: killed while it waits
    return 3;
  });
  auto db = open();
  fair_lock holder(db, "dead");
  holder.lock();
  group.start();
  ASSERT_TRUE(await_entries(db, "dead", 'F', 2));
  ::kill(child, SIGKILL);
  EXPECT_EQ(group.wait_all(), 0);
  fair_lock next(open(), "dead");
  auto after = std::async(std::launch::async, [&] {
    next.lock();
    next.unlock();
    return clock_type::now();
  });
  ASSERT_TRUE(await_entries(db, "dead", 'F', 3));
  holder.unlock();
  const auto released = clock_type::now();
  EXPECT_LE(after.get() - released, 500ms + scaled(1500ms)) << "the dead waiter's place ran out with its lease";
}

// An acquire that failed after its place was committed (a lost reply; a check and a give-back
// that both failed) leaves a live place of its owner behind. The owner's next acquire must not
// join it: its level would be nobody's, renewed forever, and lock everyone else out (the fault
// harness found this). The orphan is made here with the queue's own enqueue, as that owner.
TEST_P(QueueLockTest, AnAcquireDoesNotJoinAnOrphanedPlaceOfItsOwner) {
  auto db = open();
  auto& impl = detail::database_access::impl(db);
  const std::string owner = impl.registry().session() + "/k:job";
  for (const bool write : {true, false}) {
    const std::string name = write ? "orphan-w" : "orphan-r";
    std::int64_t orphan = 0;
    {
      auto conn = impl.borrow();
      const auto sql = detail::queue_statements(impl.dialect(), impl.options().table);
      orphan = detail::queue_store(*conn, *sql, impl.sql().wakeup_channel)
                   .enqueue({name, detail::queue_kind::rw, owner, impl.registry().session(), 60s, true, !write})
                   .value()
                   .ticket;
    }
    rw_lock_options o;
    o.owner = "job";
    rw_lock l(db, name, o);
    if (write)
      l.lock();
    else
      l.lock_shared();
    EXPECT_GT(l.fence(), orphan) << "a place of its own, at the back";
    EXPECT_EQ(entries(db, name, 'R'), 1) << "the orphan was deleted";
    if (write)
      l.unlock();
    else
      l.unlock_shared();
    EXPECT_EQ(entries(db, name, 'R'), 0) << "nothing is left behind";
    EXPECT_TRUE(rw_lock(open(), name).try_lock()) << "nobody is locked out";
  }
}

// Processes queue one after another (each only once the previous one's place is in the queue)
// behind a holder; the order they are granted in is recorded in memory shared by all of them.
// The children are forked before the holder's lease keeper runs (a child forked while that thread
// is inside SQLite could inherit one of SQLite's process-wide mutexes locked, and hang on it), and
// each waits for its turn, given through the shared memory.
TEST_P(QueueLockTest, ProcessesAreGrantedInTheOrderTheyQueued) {
  struct shared_order {
    std::atomic<int> turn;  // the child that may queue now
    std::atomic<int> next;
    std::atomic<int> slots[8];
  };
  void* mem = ::mmap(nullptr, sizeof(shared_order), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* log = new (mem) shared_order{};
  log->turn.store(-1);
  constexpr int kProcesses = 6;
  process_group children;
  for (int i = 0; i < kProcesses; ++i) {
    children.spawn([&, i, log]() -> int {
      while (log->turn.load() < i) std::this_thread::sleep_for(1ms);
      fair_lock mine(open(), "procs");
      if (!mine.try_lock_for(60s)) return 2;
      log->slots[log->next.fetch_add(1)].store(i);
      std::this_thread::sleep_for(5ms);
      mine.unlock();
      return 0;
    });
  }
  auto db = open();
  fair_lock holder(db, "procs");
  holder.lock();
  children.start();
  for (int i = 0; i < kProcesses; ++i) {
    log->turn.store(i);
    if (!await_entries(db, "procs", 'F', i + 2)) {
      ADD_FAILURE() << "process " << i << " never queued";
      log->turn.store(kProcesses);  // the rest go, so that wait_all() returns
      break;
    }
  }
  holder.unlock();
  EXPECT_EQ(children.wait_all(), kProcesses);
  for (int i = 0; i < kProcesses; ++i) EXPECT_EQ(log->slots[i].load(), i) << "grant " << i;
  ::munmap(mem, sizeof(shared_order));
}

// ---- rw_lock

TEST_P(QueueLockTest, ReadersShareAndAWriterExcludesEveryone) {
  auto db = open();
  rw_lock a(db, "doc");
  rw_lock b(open(), "doc");
  rw_lock c(open(), "doc");
  std::shared_lock ra(a);
  ASSERT_TRUE(b.try_lock_shared()) << "readers share";
  EXPECT_TRUE(a.holds_shared());
  EXPECT_FALSE(a.holds()) << "no write level";
  EXPECT_FALSE(c.try_lock()) << "a writer waits for the readers";
  b.unlock_shared();
  ra.unlock();
  ASSERT_TRUE(c.try_lock());
  EXPECT_TRUE(c.holds());
  EXPECT_FALSE(a.try_lock_shared()) << "a reader waits for the writer";
  EXPECT_FALSE(b.try_lock()) << "and so does a writer";
  c.unlock();
  EXPECT_EQ(entries(db, "doc", 'R'), 0);
}

TEST_P(QueueLockTest, AReaderArrivingBehindAWaitingWriterWaitsForIt) {
  auto db = open();
  rw_lock reader(db, "stream");
  reader.lock_shared();
  rw_lock writer(open(), "stream");
  auto wrote = std::async(std::launch::async, [&] {
    writer.lock();
    const auto fence = writer.fence();
    writer.unlock();
    return fence;
  });
  ASSERT_TRUE(await_entries(db, "stream", 'R', 2));
  rw_lock late(open(), "stream");
  EXPECT_FALSE(late.try_lock_shared()) << "no writer starvation: the late reader is behind the writer";
  auto read = std::async(std::launch::async, [&] {
    late.lock_shared();
    const auto fence = late.fence();
    late.unlock_shared();
    return fence;
  });
  ASSERT_TRUE(await_entries(db, "stream", 'R', 3));
  reader.unlock_shared();
  const auto w = wrote.get();
  const auto r = read.get();
  EXPECT_LT(w, r) << "the writer went first";
}

TEST_P(QueueLockTest, ReadersQueuedBehindAWriterAllHoldTogetherWhenItLeaves) {
  auto db = open();
  rw_lock writer(db, "batch");
  writer.lock();
  std::atomic<int> holding{0};
  std::atomic<int> peak{0};
  std::vector<std::future<void>> readers;
  for (int i = 0; i < 3; ++i)
    readers.push_back(std::async(std::launch::async, [&] {
      rw_lock mine(open(), "batch");
      mine.lock_shared();
      const int now = ++holding;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
      const auto until = clock_type::now() + scaled(5s);
      while (peak.load() < 3 && clock_type::now() < until) std::this_thread::sleep_for(5ms);
      --holding;
      mine.unlock_shared();
    }));
  ASSERT_TRUE(await_entries(db, "batch", 'R', 4));
  writer.unlock();
  for (auto& r : readers) r.get();
  EXPECT_EQ(peak.load(), 3) << "no reader starvation: the readers behind the writer share";
}

TEST_P(QueueLockTest, AnUpgradeIsRefusedAndChangesNothing) {
  auto db = open();
  rw_lock l(db, "up");
  l.lock_shared();
  const auto fence = l.fence();
  EXPECT_THROW(l.lock(), invalid_argument);
  EXPECT_THROW((void)l.try_lock(), invalid_argument);
  EXPECT_TRUE(l.holds_shared());
  EXPECT_FALSE(l.holds());
  EXPECT_EQ(l.fence(), fence);
  l.unlock_shared();
  EXPECT_EQ(entries(db, "up", 'R'), 0);
}

TEST_P(QueueLockTest, ADowngradeKeepsThePlaceSoAWriterQueuedMeanwhileStaysBehind) {
  auto db = open();
  rw_lock w(db, "down");
  w.lock();
  const auto fence = w.fence();
  rw_lock w2(open(), "down");
  auto second = std::async(std::launch::async, [&]() -> std::int64_t {  // the thread is the owner
    if (!w2.try_lock_for(scaled(20s))) return -1;
    const auto f = w2.fence();
    w2.unlock();
    return f;
  });
  ASSERT_TRUE(await_entries(db, "down", 'R', 2));
  w.lock_shared();  // the writer also reads
  w.unlock();       // and stops writing: a reader now, on the same ticket
  EXPECT_TRUE(w.holds_shared());
  EXPECT_FALSE(w.holds());
  EXPECT_EQ(w.fence(), fence);
  EXPECT_EQ(second.wait_for(300ms), std::future_status::timeout) << "the queued writer is still behind the reader";
  rw_lock r(open(), "down");
  EXPECT_FALSE(r.try_lock_shared()) << "a new reader is behind the queued writer";
  w.unlock_shared();
  EXPECT_GT(second.get(), fence) << "the queued writer holds once the downgraded reader leaves";
}

TEST_P(QueueLockTest, WriterFencesIncreaseAndReadersSeeTheEpoch) {
  auto db = open();
  rw_lock l(db, "epochs");
  l.lock();
  const auto w1 = l.fence();
  l.unlock();
  l.lock_shared();
  const auto r1 = l.fence();
  l.unlock_shared();
  l.lock();
  const auto w2 = l.fence();
  l.unlock();
  EXPECT_LT(w1, r1);
  EXPECT_LT(r1, w2);
}

TEST_P(QueueLockTest, FairAndReadWriteLocksOfOneNameDoNotExcludeEachOther) {
  auto db = open();
  fair_lock f(db, "shared-name");
  rw_lock rw(open(), "shared-name");
  table_lock t(open(), "shared-name");
  ASSERT_TRUE(f.try_lock());
  EXPECT_TRUE(rw.try_lock()) << "different kinds of lock";
  EXPECT_TRUE(t.try_lock());
  f.unlock();
  rw.unlock();
  t.unlock();
}

// Three reader processes read in a loop with overlapping holds, so some reader holds nearly all
// the time. A writer that queues meanwhile still gets its turn (the readers that arrive after it
// wait behind it), holds alone, and the readers go on reading after it.
TEST_P(QueueLockTest, AWriterIsNotStarvedByReaderProcessesThatKeepOverlapping) {
  struct shared_state {
    std::atomic<int> readers;
    std::atomic<int> peak_readers;
    std::atomic<int> writer_inside;
    std::atomic<int> violations;
    std::atomic<int> write_done;
    std::atomic<int> reads_after_write;
    std::atomic<int> stop;
  };
  void* mem = ::mmap(nullptr, sizeof(shared_state), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* st = new (mem) shared_state{};
  constexpr int kReaders = 3;
  process_group group;
  for (int i = 0; i < kReaders; ++i) {
    group.spawn([&, st]() -> int {
      rw_lock l(open(), "busy");
      while (st->stop.load() == 0) {
        if (!l.try_lock_shared_for(60s)) return 2;
        const int now = st->readers.fetch_add(1) + 1;
        if (st->writer_inside.load() != 0) st->violations.fetch_add(1);
        int p = st->peak_readers.load();
        while (now > p && !st->peak_readers.compare_exchange_weak(p, now)) {
        }
        std::this_thread::sleep_for(30ms);
        st->readers.fetch_sub(1);
        if (st->write_done.load() != 0) st->reads_after_write.fetch_add(1);
        l.unlock_shared();
      }
      return 0;
    });
  }
  group.start();
  const auto until = [](std::chrono::milliseconds d) { return clock_type::now() + scaled(d); };
  for (const auto end = until(10s); st->peak_readers.load() < 2 && clock_type::now() < end;)
    std::this_thread::sleep_for(5ms);
  EXPECT_GE(st->peak_readers.load(), 2) << "the readers never overlapped";
  {
    rw_lock writer(open(), "busy");
    EXPECT_TRUE(writer.try_lock_for(scaled(20s))) << "writer starvation: overlapping readers kept it out";
    if (writer.holds()) {
      st->writer_inside.store(1);
      EXPECT_EQ(st->readers.load(), 0) << "the writer holds beside a reader";
      std::this_thread::sleep_for(20ms);
      st->writer_inside.store(0);
      st->write_done.store(1);
      writer.unlock();
    }
  }
  for (const auto end = until(10s); st->reads_after_write.load() < kReaders && clock_type::now() < end;)
    std::this_thread::sleep_for(5ms);
  EXPECT_GE(st->reads_after_write.load(), kReaders) << "reader starvation: the readers stopped after the writer";
  st->stop.store(1);
  EXPECT_EQ(group.wait_all(), kReaders);
  EXPECT_EQ(st->violations.load(), 0) << "a reader held beside the writer";
  ::munmap(mem, sizeof(shared_state));
}

// Processes of readers and writers on one name: a counter in shared memory records readers and
// writers inside at once; a writer is never inside with anyone, and both kinds get their turns.
TEST_P(QueueLockTest, ProcessesOfReadersAndWritersNeverOverlapAWriter) {
  struct shared_counts {
    std::atomic<int> readers;
    std::atomic<int> writers;
    std::atomic<int> violations;
    std::atomic<int> reads;
    std::atomic<int> writes;
    std::atomic<int> peak_readers;
  };
  void* mem = ::mmap(nullptr, sizeof(shared_counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* c = new (mem) shared_counts{};
  constexpr int kProcesses = 6;
  constexpr int kRounds = 10;
  process_group group;
  for (int i = 0; i < kProcesses; ++i) {
    group.spawn([&, i, c]() -> int {
      rw_lock l(open(), "mixed");
      for (int r = 0; r < kRounds; ++r) {
        if ((i + r) % 3 == 0) {
          if (!l.try_lock_for(60s)) return 2;
          if (c->writers.fetch_add(1) != 0 || c->readers.load() != 0) c->violations.fetch_add(1);
          std::this_thread::sleep_for(2ms);
          c->writers.fetch_sub(1);
          c->writes.fetch_add(1);
          l.unlock();
        } else {
          if (!l.try_lock_shared_for(60s)) return 2;
          const int now = c->readers.fetch_add(1) + 1;
          if (c->writers.load() != 0) c->violations.fetch_add(1);
          int p = c->peak_readers.load();
          while (now > p && !c->peak_readers.compare_exchange_weak(p, now)) {
          }
          std::this_thread::sleep_for(2ms);
          c->readers.fetch_sub(1);
          c->reads.fetch_add(1);
          l.unlock_shared();
        }
      }
      return 0;
    });
  }
  group.start();
  EXPECT_EQ(group.wait_all(), kProcesses);
  EXPECT_EQ(c->violations.load(), 0) << "a writer overlapped another holder";
  EXPECT_EQ(c->reads.load() + c->writes.load(), kProcesses * kRounds);
  EXPECT_GT(c->writes.load(), 0);
  ::munmap(mem, sizeof(shared_counts));
  EXPECT_EQ(entries(open(), "mixed", 'R'), 0);
}

INSTANTIATE_TEST_SUITE_P(Targets, QueueLockTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
