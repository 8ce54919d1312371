// The wait queue's statements (src/dialect/queue_sql.hpp, migration 0005) on every driver ×
// dialect pair, run as raw SQL on the runtime role's connections: enqueue (new entries, levels,
// refused upgrades, replacement of an expired entry), tickets that rise in arrival order across
// kinds and shared with the lock table's fences, the check's verdicts for fair and read-write
// entries (phase-FIFO, no writer starvation, kinds apart, expired entries ahead deleted, renewed
// ones kept), release by level, leave, renewal, PostgreSQL's wake-ups, a check waiting on a locked
// entry that blocks no enqueue, and real processes enqueuing at once; also through PgBouncer.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "core/handle/database_impl.hpp"
#include "dialect/queue_sql.hpp"
#include "sqllock/error.hpp"
#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kLongLease = 60000;  // ms: never runs out during a test

struct entry {
  std::int64_t ticket = 0;
  std::int64_t writes = 0;
  std::int64_t reads = 0;
};

using counts = std::pair<std::int64_t, std::int64_t>;

struct turn {
  std::int64_t mine = -1;
  std::int64_t blockers = -1;
  std::optional<std::int64_t> wait_ms;
  bool holds() const { return mine == 1 && blockers == 0; }
};

std::int64_t as_int(const detail::field& f) { return std::stoll(f.value()); }

class QueueSqlTest : public LockTableTest {
 protected:
  void SetUp() override {
    LockTableTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    q_ = detail::queue_statements(GetParam().dialect, table_);
    db_.emplace(open());
  }

  bool pg() const { return GetParam().dialect == dialect_kind::postgresql; }
  bool my() const { return GetParam().dialect == dialect_kind::mysql; }
  std::string channel() const { return "sqllock_" + table_; }

  // A session listening on the wake-up channel, as a waiting process's listener is.
  struct listening {
    std::unique_ptr<detail::connection> conn;
    detail::notification_source* source = nullptr;
    // Drains until `name` arrives (true) or nothing more comes for `quiet`.
    bool heard(const std::string& name, std::chrono::milliseconds quiet) const {
      for (;;) {
        const auto got = source->await(quiet);
        if (got.empty()) return false;
        if (std::find(got.begin(), got.end(), name) != got.end()) return true;
      }
    }
  };
  // nullopt where no notification can arrive: not PostgreSQL, a transaction-mode pooler, or a
  // driver without them.
  std::optional<listening> listen() const {
    if (!pg() || GetParam().transaction_pooler) return std::nullopt;
    listening l;
    l.conn = detail::database_access::impl(*db_).open();
    l.source = l.conn->notifications();
    if (l.source == nullptr) return std::nullopt;
    l.source->listen(channel());
    return l;
  }
  std::string queue() const { return table_ + "_queue"; }

  static detail::result run(detail::connection& c, const std::string& statement, std::vector<detail::value> params) {
    return c.exec(statement, params);
  }
  detail::result run(const database& db, const std::string& statement, std::vector<detail::value> params) const {
    auto c = detail::database_access::impl(db).borrow();
    return run(*c, statement, std::move(params));
  }

  // enqueue (and its read-back where the dialect has one) on `c`.
  entry enqueue(detail::connection& c, const std::string& resource, const std::string& kind, const std::string& owner,
                bool write, std::int64_t lease_ms = kLongLease, bool auto_renew = true,
                const std::string& session = "session-1") const {
    auto r = run(c, q_->enqueue,
                 {resource, kind, owner, session, std::string("host"), std::int64_t{42}, std::string("thread"),
                  lease_ms, std::int64_t{auto_renew ? 1 : 0}, std::int64_t{write ? 1 : 0}});
    if (q_->enqueue_reads_back) r = run(c, q_->enqueue_readback, {resource, kind, owner});
    EXPECT_EQ(r.rows.size(), 1u) << "enqueue of " << owner << " on " << resource;
    if (r.rows.empty()) return {};
    return {as_int(r.rows[0].at(0)), as_int(r.rows[0].at(1)), as_int(r.rows[0].at(2))};
  }
  entry enqueue(const std::string& resource, const std::string& kind, const std::string& owner, bool write,
                std::int64_t lease_ms = kLongLease, bool auto_renew = true,
                const std::string& session = "session-1") const {
    auto c = detail::database_access::impl(*db_).borrow();
    return enqueue(*c, resource, kind, owner, write, lease_ms, auto_renew, session);
  }

  turn check(const database& db, const std::string& resource, const std::string& kind, std::int64_t ticket,
             const std::string& owner) const {
    auto c = detail::database_access::impl(db).borrow();
    const std::vector<detail::value> params = {resource, kind, ticket, owner};
    // As the contract says: one statement, or the read, and the delete and the read again only
    // when the read found an expired blocker.
    auto r = run(*c, q_->check_read.empty() ? q_->check : q_->check_read, params);
    if (!q_->check_read.empty() && !r.rows.empty() && as_int(r.rows[0].at(3)) > 0) {
      auto bounded = params;
      bounded.emplace_back(as_int(r.rows[0].at(4)));
      run(*c, q_->check, bounded);
      r = run(*c, q_->check_read, params);
    }
    EXPECT_EQ(r.rows.size(), 1u) << "a check returns one row";
    if (r.rows.empty()) return {};
    const auto& row = r.rows[0];
    return {as_int(row.at(0)), as_int(row.at(1)), row.at(2) ? std::optional(as_int(row.at(2))) : std::nullopt};
  }
  turn check(const std::string& resource, const std::string& kind, std::int64_t ticket,
             const std::string& owner) const {
    return check(*db_, resource, kind, ticket, owner);
  }

  // release as the contract describes it: one statement, or the last-level delete and then the
  // decrement (and read-back). nullopt: no such entry.
  std::optional<counts> release(const database& db, const std::string& resource, const std::string& kind,
                                std::int64_t ticket, const std::string& owner, bool write) const {
    auto c = detail::database_access::impl(db).borrow();
    std::vector<detail::value> params = {resource, kind, ticket, owner, std::int64_t{write ? 1 : 0}};
    if (q_->release_decrement.empty()) {
      params.emplace_back(channel());
      const auto r = run(*c, q_->release, params);
      if (r.rows.empty()) return std::nullopt;
      EXPECT_EQ(r.rows.size(), 1u);
      return std::pair(as_int(r.rows[0].at(0)), as_int(r.rows[0].at(1)));
    }
    if (run(*c, q_->release, params).affected == 1) return counts(0, 0);
    const auto r = run(*c, q_->release_decrement, params);
    if (q_->release_reads_back) {
      if (r.affected == 0) return std::nullopt;
      const auto back = run(*c, q_->release_readback, {resource, kind, ticket, owner});
      if (back.rows.empty()) return std::nullopt;
      return std::pair(as_int(back.rows[0].at(0)), as_int(back.rows[0].at(1)));
    }
    if (r.rows.empty()) return std::nullopt;
    return std::pair(as_int(r.rows[0].at(0)), as_int(r.rows[0].at(1)));
  }
  std::optional<counts> release(const std::string& resource, const std::string& kind, std::int64_t ticket,
                                const std::string& owner, bool write) const {
    return release(*db_, resource, kind, ticket, owner, write);
  }

  bool leave(const std::string& resource, const std::string& kind, std::int64_t ticket,
             const std::string& owner) const {
    std::vector<detail::value> params = {resource, kind, ticket, owner};
    if (pg()) params.emplace_back(channel());
    const auto r = run(*db_, q_->leave, params);
    return !r.rows.empty() || r.affected > 0;
  }

  // (resource, owner, ticket, kind) of each entry the renewal of `session` confirmed, sorted.
  std::vector<std::string> renew(const std::string& session) const {
    auto c = detail::database_access::impl(*db_).borrow();
    auto r = run(*c, q_->renew, {session});
    if (q_->renew_reads_back) r = run(*c, q_->renew_readback, {session});
    std::vector<std::string> out;
    for (const auto& row : r.rows)
      out.push_back(row.at(0).value() + "|" + row.at(1).value() + "|" + row.at(2).value() + "|" + row.at(3).value());
    std::sort(out.begin(), out.end());
    return out;
  }

  // The SQL for "now + seconds" on the database's clock, in the column's own type.
  std::string now_plus(int seconds) const {
    switch (GetParam().dialect) {
      case dialect_kind::postgresql: return "clock_timestamp() + interval '" + std::to_string(seconds) + " seconds'";
      case dialect_kind::mysql: return "UTC_TIMESTAMP(6) + INTERVAL " + std::to_string(seconds) + " SECOND";
      case dialect_kind::sqlite:
        return "strftime('%Y-%m-%d %H:%M:%f', 'now', '" + std::string(seconds < 0 ? "" : "+") +
               std::to_string(seconds) + " seconds')";
    }
    return "";
  }

  // Sets the expiry of owner's entry (by SQL on the database clock, e.g. now_plus(-1): expired).
  void set_expiry(const std::string& resource, const std::string& kind, const std::string& owner,
                  const std::string& expiry) const {
    const auto r = run(
        *db_,
        "UPDATE " + queue() + " SET expires_at = " + expiry + " WHERE resource = $1 AND kind = $2 AND owner_token = $3",
        {resource, kind, owner});
    ASSERT_EQ(r.affected, 1u) << "no entry of " << owner;
  }
  void expire(const std::string& resource, const std::string& kind, const std::string& owner) const {
    set_expiry(resource, kind, owner, now_plus(-1));
  }

  // The entry's row as text (every column), or "" when there is none.
  std::string row_text(const std::string& resource, const std::string& kind, const std::string& owner) const {
    const auto r = run(*db_, "SELECT * FROM " + queue() + " WHERE resource = $1 AND kind = $2 AND owner_token = $3",
                       {resource, kind, owner});
    if (r.rows.empty()) return "";
    std::string out;
    for (const auto& f : r.rows[0]) out.append(f.value_or("NULL")).append("|");
    return out;
  }
  std::int64_t entries(const std::string& where = "1 = 1") const {
    return as_int(sql(*db_, "SELECT COUNT(*) FROM " + queue() + " WHERE " + where).rows.at(0).at(0));
  }
  std::string expires_at(const std::string& resource, const std::string& kind, const std::string& owner) const {
    return run(*db_, "SELECT expires_at FROM " + queue() + " WHERE resource = $1 AND kind = $2 AND owner_token = $3",
               {resource, kind, owner})
        .rows.at(0)
        .at(0)
        .value();
  }
  std::string begin_statement() const { return pg() ? "BEGIN" : my() ? "START TRANSACTION" : "BEGIN IMMEDIATE"; }

  std::shared_ptr<const detail::queue_sql> q_;
  std::optional<database> db_;
};

// ---- enqueue

TEST_P(QueueSqlTest, EnqueueOfANewOwnerTakesAFreshTicketWithTheLevelAsked) {
  const auto w = enqueue("job", "R", "a", true);
  EXPECT_GT(w.ticket, 0);
  EXPECT_EQ(w.writes, 1);
  EXPECT_EQ(w.reads, 0);
  const auto r = enqueue("job", "R", "b", false);
  EXPECT_GT(r.ticket, w.ticket);
  EXPECT_EQ(r.writes, 0);
  EXPECT_EQ(r.reads, 1);
  const auto f = enqueue("job", "F", "a", true);
  EXPECT_GT(f.ticket, r.ticket) << "the same owner on the other kind is another entry";
  EXPECT_EQ(f.writes, 1);
  EXPECT_EQ(entries(), 3);
}

TEST_P(QueueSqlTest, ASecondEnqueueOfTheSameOwnerAddsALevelToTheSameTicket) {
  const auto first = enqueue("job", "R", "a", true);
  const auto second = enqueue("job", "R", "a", true);
  EXPECT_EQ(second.ticket, first.ticket);
  EXPECT_EQ(second.writes, 2);
  EXPECT_EQ(second.reads, 0);
  const auto downgrade = enqueue("job", "R", "a", false);
  EXPECT_EQ(downgrade.ticket, first.ticket) << "a read level of a writer stays in place (a downgrade)";
  EXPECT_EQ(downgrade.writes, 2);
  EXPECT_EQ(downgrade.reads, 1);
  const auto reader = enqueue("job", "R", "b", false);
  const auto again = enqueue("job", "R", "b", false);
  EXPECT_EQ(again.ticket, reader.ticket);
  EXPECT_EQ(again.reads, 2);
  const auto fair = enqueue("job", "F", "c", true);
  EXPECT_EQ(enqueue("job", "F", "c", true).writes, 2);
  EXPECT_EQ(enqueue("job", "F", "c", true).ticket, fair.ticket);
  EXPECT_EQ(entries(), 3);
}

TEST_P(QueueSqlTest, AWriteLevelAskedOfALiveReaderEntryChangesNothing) {
  const auto reader = enqueue("job", "R", "b", false);
  const auto before = row_text("job", "R", "b");
  const auto upgrade = enqueue("job", "R", "b", true);
  EXPECT_EQ(upgrade.ticket, reader.ticket);
  EXPECT_EQ(upgrade.writes, 0) << "an upgrade is refused: the core sees writes = 0";
  EXPECT_EQ(upgrade.reads, 1);
  EXPECT_EQ(row_text("job", "R", "b"), before) << "not one column changed";
}

TEST_P(QueueSqlTest, AFairLockEntryTakesNoReadLevel) {
  try {
    (void)run(*db_, q_->enqueue,
              {std::string("job"), std::string("F"), std::string("a"), std::string("s"), std::string("h"),
               std::int64_t{1}, std::string("t"), kLongLease, std::int64_t{1}, std::int64_t{0}});
    ADD_FAILURE() << "a fair-lock entry with a read level was stored";
  } catch (const backend_error&) {
  }
  EXPECT_EQ(entries(), 0);
}

// ---- tickets

TEST_P(QueueSqlTest, TicketsRiseInEnqueueOrderAcrossKindsAfterAnEntryLeftAndWithLockFences) {
  std::vector<std::int64_t> tickets;
  tickets.push_back(enqueue("job", "F", "a", true).ticket);
  tickets.push_back(enqueue("job", "R", "b", false).ticket);
  tickets.push_back(enqueue("job", "F", "c", true).ticket);
  ASSERT_TRUE(leave("job", "F", tickets[0], "a"));
  tickets.push_back(enqueue("job", "R", "d", true).ticket);
  tickets.push_back(enqueue("job", "F", "a", true).ticket);  // a again, after it left
  table_lock lock(*db_, "job");
  ASSERT_TRUE(lock.try_lock());
  tickets.push_back(lock.fence());  // the lock table's fences come from the same source
  lock.unlock();
  tickets.push_back(enqueue("other", "R", "e", true).ticket);
  tickets.push_back(enqueue("job", "R", "e", false).ticket);
  for (std::size_t i = 1; i < tickets.size(); ++i)
    EXPECT_GT(tickets[i], tickets[i - 1]) << "draw " << i << " of " << testing::PrintToString(tickets);
}

TEST_P(QueueSqlTest, AnExpiredEntryOfTheSameOwnerIsReplacedByANewEntryWithAHigherTicket) {
  const auto first = enqueue("job", "R", "a", true);
  ASSERT_EQ(enqueue("job", "R", "a", true).writes, 2);
  const auto other = enqueue("job", "R", "b", false);
  expire("job", "R", "a");
  const auto renewed = enqueue("job", "R", "a", false, 30000, false, "session-2");
  EXPECT_GT(renewed.ticket, other.ticket) << "a new place at the back of the queue";
  EXPECT_EQ(renewed.writes, 0) << "replaced whole: no level of the expired entry survives";
  EXPECT_EQ(renewed.reads, 1);
  EXPECT_EQ(entries("owner_token = 'a'"), 1);
  EXPECT_EQ(entries("owner_token = 'a' AND holder_session = 'session-2' AND lease_ms = 30000"), 1);
  EXPECT_EQ(entries("owner_token = 'a' AND expires_at > " + now_plus(0)), 1) << "live again";
  EXPECT_NE(first.ticket, renewed.ticket);
  const auto t = check("job", "R", renewed.ticket, "a");
  EXPECT_EQ(t.blockers, 0) << "a reader behind a reader";
  EXPECT_EQ(check("job", "R", first.ticket, "a").mine, 0) << "the old ticket is gone";
}

// ---- check

TEST_P(QueueSqlTest, TheFirstEntryHolds) {
  const auto a = enqueue("job", "F", "a", true);
  const auto t = check("job", "F", a.ticket, "a");
  EXPECT_EQ(t.mine, 1);
  EXPECT_EQ(t.blockers, 0);
  EXPECT_FALSE(t.wait_ms) << "NULL without blockers";
  EXPECT_TRUE(t.holds());
}

TEST_P(QueueSqlTest, AWriterBehindAnEntryIsBlockedUntilItsLeaseRunsOut) {
  for (const std::string kind : {"F", "R"}) {
    const auto a = enqueue("job", kind, "a", true);
    const auto b = enqueue("job", kind, "b", true);
    const auto t = check("job", kind, b.ticket, "b");
    EXPECT_EQ(t.mine, 1) << kind;
    EXPECT_EQ(t.blockers, 1) << kind;
    ASSERT_TRUE(t.wait_ms) << kind;
    EXPECT_LE(*t.wait_ms, kLongLease) << kind;
    EXPECT_GT(*t.wait_ms, kLongLease - 30000) << kind << ": about the first entry's remaining lease";
    EXPECT_TRUE(check("job", kind, a.ticket, "a").holds()) << kind << ": an entry behind never blocks";
    EXPECT_EQ(release("job", kind, a.ticket, "a", true), counts(0, 0)) << kind;
    EXPECT_TRUE(check("job", kind, b.ticket, "b").holds()) << kind << ": its turn once the first left";
  }
}

TEST_P(QueueSqlTest, ReadersBehindAReaderAllHold) {
  const auto a = enqueue("job", "R", "a", false);
  const auto b = enqueue("job", "R", "b", false);
  const auto c = enqueue("job", "R", "c", false);
  EXPECT_TRUE(check("job", "R", a.ticket, "a").holds());
  EXPECT_TRUE(check("job", "R", b.ticket, "b").holds());
  const auto t = check("job", "R", c.ticket, "c");
  EXPECT_TRUE(t.holds());
  EXPECT_FALSE(t.wait_ms);
}

TEST_P(QueueSqlTest, AReaderBehindAWriterIsBlocked) {
  const auto w = enqueue("job", "R", "w", true);
  const auto r = enqueue("job", "R", "r", false);
  const auto t = check("job", "R", r.ticket, "r");
  EXPECT_EQ(t.mine, 1);
  EXPECT_EQ(t.blockers, 1);
  EXPECT_TRUE(t.wait_ms);
  EXPECT_TRUE(check("job", "R", w.ticket, "w").holds());
}

TEST_P(QueueSqlTest, AWriterBehindReadersIsBlockedByEachOfThem) {
  const auto a = enqueue("job", "R", "a", false);
  enqueue("job", "R", "b", false);
  const auto w = enqueue("job", "R", "w", true);
  const auto t = check("job", "R", w.ticket, "w");
  EXPECT_EQ(t.mine, 1);
  EXPECT_EQ(t.blockers, 2);
  ASSERT_TRUE(release("job", "R", a.ticket, "a", false));
  EXPECT_EQ(check("job", "R", w.ticket, "w").blockers, 1) << "still the second reader";
}

TEST_P(QueueSqlTest, AReaderBehindAWaitingWriterIsBlockedSoWritersNeverStarve) {
  const auto r1 = enqueue("job", "R", "r1", false);
  const auto w = enqueue("job", "R", "w", true);
  const auto r2 = enqueue("job", "R", "r2", false);
  EXPECT_TRUE(check("job", "R", r1.ticket, "r1").holds());
  EXPECT_EQ(check("job", "R", w.ticket, "w").blockers, 1);
  const auto t = check("job", "R", r2.ticket, "r2");
  EXPECT_EQ(t.mine, 1);
  EXPECT_EQ(t.blockers, 1) << "the waiting writer blocks it; the reader ahead of the writer does not";
  ASSERT_TRUE(release("job", "R", r1.ticket, "r1", false));
  EXPECT_TRUE(check("job", "R", w.ticket, "w").holds());
  EXPECT_EQ(check("job", "R", r2.ticket, "r2").blockers, 1) << "now the holding writer";
}

TEST_P(QueueSqlTest, FairAndReadWriteEntriesOfOneNameNeverBlockEachOther) {
  const auto f1 = enqueue("job", "F", "a", true);
  const auto w1 = enqueue("job", "R", "b", true);
  const auto f2 = enqueue("job", "F", "c", true);
  const auto w2 = enqueue("job", "R", "d", true);
  EXPECT_TRUE(check("job", "F", f1.ticket, "a").holds());
  EXPECT_TRUE(check("job", "R", w1.ticket, "b").holds()) << "the fair entry ahead is another kind";
  EXPECT_EQ(check("job", "F", f2.ticket, "c").blockers, 1) << "only the fair entry ahead";
  EXPECT_EQ(check("job", "R", w2.ticket, "d").blockers, 1) << "only the read-write entry ahead";
  const auto o = enqueue("other", "F", "e", true);
  EXPECT_TRUE(check("other", "F", o.ticket, "e").holds()) << "other names never block";
}

TEST_P(QueueSqlTest, AnExpiredEntryAheadIsDeletedByTheCheckAndNoLongerBlocks) {
  const auto a = enqueue("job", "R", "a", true);
  const auto r = enqueue("job", "R", "r", false);
  const auto w = enqueue("job", "R", "w", true);
  expire("job", "R", "a");
  const auto t = check("job", "R", r.ticket, "r");
  EXPECT_TRUE(t.holds());
  EXPECT_EQ(entries("owner_token = 'a'"), 0) << "the check deleted the expired entry";
  EXPECT_EQ(check("job", "R", w.ticket, "w").blockers, 1) << "the live reader ahead still blocks the writer";
  EXPECT_EQ(check("job", "R", a.ticket, "a").mine, 0);
  EXPECT_EQ(entries(), 2);
}

// The check's window: the first 32 blockers ahead, so that a check costs the same at any place.
TEST_P(QueueSqlTest, ACheckCountsAtMostTheFirst32BlockersAheadAndClearsExpiredOnesAWindowAtATime) {
  constexpr int kAhead = 40;
  for (int i = 0; i < kAhead; ++i) enqueue("job", "F", "e" + std::to_string(i), true);
  const auto b = enqueue("job", "F", "b", true);
  EXPECT_EQ(check("job", "F", b.ticket, "b").blockers, 32) << "the window, not all 40";
  // The first 35 expire: the live 5 behind them still block, and the checks that get there delete
  // the expired ones a window at a time — never granting before.
  for (int i = 0; i < 35; ++i) expire("job", "F", "e" + std::to_string(i));
  turn t = check("job", "F", b.ticket, "b");
  for (int round = 0; round < 4 && t.blockers != 5; ++round) {
    EXPECT_FALSE(t.holds()) << "round " << round;
    EXPECT_GE(t.blockers, 1);
    t = check("job", "F", b.ticket, "b");
  }
  EXPECT_EQ(t.blockers, 5) << "the 5 live entries";
  EXPECT_EQ(entries(), 6) << "every expired entry ahead deleted";
}

TEST_P(QueueSqlTest, AReaderLooksPastAnyNumberOfReadersAheadForAWriter) {
  for (int i = 0; i < 40; ++i) enqueue("job", "R", "r" + std::to_string(i), false);
  const auto early = enqueue("job", "R", "early", false);
  EXPECT_TRUE(check("job", "R", early.ticket, "early").holds()) << "40 readers ahead, no writer";
  const auto w = enqueue("job", "R", "w", true);
  const auto late = enqueue("job", "R", "late", false);
  EXPECT_EQ(check("job", "R", w.ticket, "w").blockers, 32) << "a writer counts the readers' window";
  const auto t = check("job", "R", late.ticket, "late");
  EXPECT_FALSE(t.holds());
  EXPECT_EQ(t.blockers, 1) << "only the writer ahead blocks a reader";
}

TEST_P(QueueSqlTest, AnExpiredEntryBehindIsNotDeletedByTheCheck) {
  const auto a = enqueue("job", "F", "a", true);
  enqueue("job", "F", "b", true);
  expire("job", "F", "b");
  EXPECT_TRUE(check("job", "F", a.ticket, "a").holds());
  EXPECT_EQ(entries("owner_token = 'b'"), 1) << "only entries ahead are the check's business";
}

TEST_P(QueueSqlTest, AnEntryRenewedJustBeforeTheCheckIsNotDeleted) {
  enqueue("job", "F", "a", true);
  const auto b = enqueue("job", "F", "b", true, kLongLease, true, "session-2");
  // A renewal of a that read its clock while a was live commits while the check waits: it holds a's
  // row (expired in the committed version) until the check has started.
  expire("job", "F", "a");
  database other = open();
  auto renewal = detail::database_access::impl(other).borrow();
  renewal->exec_direct(begin_statement());
  const auto updated = run(*renewal,
                           "UPDATE " + queue() + " SET expires_at = " + now_plus(60) +
                               " WHERE resource = $1 AND kind = $2 AND owner_token = $3",
                           {std::string("job"), std::string("F"), std::string("a")});
  ASSERT_EQ(updated.affected, 1u);
  auto checking = std::async(std::launch::async, [&] { return check(open(), "job", "F", b.ticket, "b"); });
  std::this_thread::sleep_for(300ms);  // lets the check reach a's row (it waits for it)
  renewal->exec_direct("COMMIT");
  ASSERT_EQ(checking.wait_for(60s), std::future_status::ready);
  const auto t = checking.get();
  EXPECT_EQ(t.mine, 1);
  EXPECT_EQ(t.blockers, 1) << "the renewed entry still holds";
  EXPECT_EQ(entries("owner_token = 'a'"), 1) << "and was not deleted";
}

TEST_P(QueueSqlTest, MineIsZeroForALeftOrExpiredEntry) {
  const auto a = enqueue("job", "R", "a", true);
  const auto b = enqueue("job", "R", "b", false);
  ASSERT_TRUE(leave("job", "R", a.ticket, "a"));
  EXPECT_EQ(check("job", "R", a.ticket, "a").mine, 0);
  EXPECT_TRUE(check("job", "R", b.ticket, "b").holds());
  expire("job", "R", "b");
  const auto t = check("job", "R", b.ticket, "b");
  EXPECT_EQ(t.mine, 0) << "an expired entry does not hold, even at the head";
  EXPECT_FALSE(t.holds());
  EXPECT_EQ(check("job", "R", b.ticket, "a").mine, 0) << "another owner's ticket is not mine";
}

TEST_P(QueueSqlTest, ACheckWaitingForALockedEntryAheadBlocksNoEnqueue) {
  if (GetParam().dialect == dialect_kind::sqlite) GTEST_SKIP() << "one writer: every write waits for another";
  if (GetParam().transaction_pooler) GTEST_SKIP() << "the test PgBouncer's two server connections are both busy";
  enqueue("job", "R", "e1", true);
  const auto e2 = enqueue("job", "R", "e2", true);
  const auto b = enqueue("job", "R", "b", true);
  expire("job", "R", "e1");
  expire("job", "R", "e2");
  // Another transaction holds e2's row lock, so the check deletes e1 and then waits for e2.
  database other = open();
  auto holder = detail::database_access::impl(other).borrow();
  holder->exec_direct(begin_statement());
  // By its primary key: an UPDATE that scanned a range would lock it all (REPEATABLE READ).
  ASSERT_EQ(run(*holder,
                "UPDATE " + queue() +
                    " SET holder_host = holder_host "
                    "WHERE resource = $1 AND kind = $2 AND ticket = $3",
                {std::string("job"), std::string("R"), e2.ticket})
                .affected,
            my() ? 0u : 1u);  // MySQL counts changed rows only; the row is locked either way
  auto checking = std::async(std::launch::async, [&] { return check(open(), "job", "R", b.ticket, "b"); });
  std::this_thread::sleep_for(300ms);
  // Enqueues of the same name meanwhile: a shorter lease puts its expiry between the waiting
  // check's candidates and b's in the expires_at index, a writer and a reader at the back.
  auto enqueuing = std::async(std::launch::async, [&] {
    database third = open();
    auto c = detail::database_access::impl(third).borrow();
    const auto x = enqueue(*c, "job", "R", "x", true, 5000);
    const auto y = enqueue(*c, "job", "R", "y", false);
    return std::pair(x, y);
  });
  const bool enqueued = enqueuing.wait_for(20s) == std::future_status::ready;
  EXPECT_TRUE(enqueued) << "an enqueue waited for the check";
  EXPECT_NE(checking.wait_for(0s), std::future_status::ready) << "the check waits for the locked entry";
  holder->exec_direct("COMMIT");
  ASSERT_EQ(checking.wait_for(60s), std::future_status::ready);
  const auto t = checking.get();
  EXPECT_TRUE(t.holds()) << "both expired entries ahead deleted: blockers " << t.blockers;
  const auto [x, y] = enqueuing.get();
  EXPECT_GT(x.ticket, b.ticket);
  EXPECT_GT(y.ticket, x.ticket);
  EXPECT_EQ(entries(), 3);
}

// ---- release and leave

TEST_P(QueueSqlTest, ReleaseGivesBackTheLevelAskedAndDeletesTheEntryAtZero) {
  const auto a = enqueue("job", "R", "a", true);
  enqueue("job", "R", "a", true);
  enqueue("job", "R", "a", false);
  EXPECT_EQ(release("job", "R", a.ticket, "a", false), counts(2, 0));
  EXPECT_EQ(release("job", "R", a.ticket, "a", false), std::nullopt) << "no read level left to give back";
  EXPECT_EQ(release("job", "R", a.ticket, "a", true), counts(1, 0));
  EXPECT_EQ(entries(), 1);
  EXPECT_EQ(release("job", "R", a.ticket, "a", true), counts(0, 0));
  EXPECT_EQ(entries(), 0) << "deleted at 0/0";
  const auto f = enqueue("job", "F", "f", true);
  EXPECT_EQ(release("job", "F", f.ticket, "f", true), counts(0, 0));
  EXPECT_EQ(entries(), 0);
}

TEST_P(QueueSqlTest, ReleaseOfAnEntryThatIsGoneChangesNothing) {
  const auto a = enqueue("job", "R", "a", true);
  const auto b = enqueue("job", "R", "b", true);
  EXPECT_EQ(release("job", "R", a.ticket, "b", true), std::nullopt) << "b's owner, a's ticket";
  EXPECT_EQ(release("job", "F", a.ticket, "a", true), std::nullopt) << "the other kind";
  ASSERT_TRUE(leave("job", "R", a.ticket, "a"));
  EXPECT_EQ(release("job", "R", a.ticket, "a", true), std::nullopt);
  EXPECT_FALSE(leave("job", "R", a.ticket, "a"));
  const auto a2 = enqueue("job", "R", "a", true);
  EXPECT_EQ(release("job", "R", a.ticket, "a", true), std::nullopt) << "a stale ticket never releases a new entry";
  EXPECT_EQ(entries(), 2);
  EXPECT_EQ(check("job", "R", a2.ticket, "a").blockers, 1);
  EXPECT_EQ(check("job", "R", b.ticket, "b").blockers, 0);
}

TEST_P(QueueSqlTest, ReleasingTheWriteLevelOfAWriterThatAlsoReadsMakesItAReaderInPlace) {
  const auto w = enqueue("job", "R", "w", true);
  const auto r = enqueue("job", "R", "r", false);
  const auto w2 = enqueue("job", "R", "w2", true);
  EXPECT_EQ(check("job", "R", r.ticket, "r").blockers, 1);
  const auto down = enqueue("job", "R", "w", false);
  EXPECT_EQ(down.ticket, w.ticket);
  EXPECT_EQ(release("job", "R", w.ticket, "w", true), counts(0, 1));
  EXPECT_EQ(entries("owner_token = 'w' AND ticket = " + std::to_string(w.ticket)), 1) << "the same ticket";
  EXPECT_TRUE(check("job", "R", w.ticket, "w").holds());
  EXPECT_TRUE(check("job", "R", r.ticket, "r").holds()) << "a reader behind the downgraded entry holds";
  EXPECT_EQ(check("job", "R", w2.ticket, "w2").blockers, 2) << "a writer behind still waits for both";
}

TEST_P(QueueSqlTest, LeaveDeletesTheEntryWhateverItsLevels) {
  const auto a = enqueue("job", "R", "a", true);
  enqueue("job", "R", "a", true);
  enqueue("job", "R", "a", false);
  const auto b = enqueue("job", "R", "b", true);
  EXPECT_FALSE(leave("job", "R", a.ticket, "b")) << "by owner and ticket";
  EXPECT_TRUE(leave("job", "R", a.ticket, "a"));
  EXPECT_EQ(entries(), 1);
  EXPECT_TRUE(check("job", "R", b.ticket, "b").holds());
}

TEST_P(QueueSqlTest, ReleaseAndLeaveNotifyTheNameWhenAnEntryLeavesOrBecomesAReader) {
  const auto listener = listen();
  if (!listener) GTEST_SKIP() << "PostgreSQL's NOTIFY, not through a transaction-mode pooler";
  // As a process that waits for these names: registered on the listening session.
  const auto& sql = detail::database_access::impl(*db_).sql();
  for (const std::string name : {"n-mode", "n-read", "n-leave"})
    ASSERT_EQ(run(*listener->conn, sql.wakeup_register, {name}).rows.at(0).at(0), "t");
  const auto w = enqueue("n-mode", "R", "w", true);
  enqueue("n-mode", "R", "w", false);
  ASSERT_TRUE(release("n-mode", "R", w.ticket, "w", true));
  EXPECT_TRUE(listener->heard("n-mode", 10s)) << "writer to reader";
  const auto r = enqueue("n-read", "R", "r", false);
  enqueue("n-read", "R", "r", false);
  ASSERT_TRUE(release("n-read", "R", r.ticket, "r", false));
  EXPECT_FALSE(listener->heard("n-read", 300ms)) << "a reader that keeps a level changes nothing for anyone";
  ASSERT_TRUE(release("n-read", "R", r.ticket, "r", false));
  EXPECT_TRUE(listener->heard("n-read", 10s)) << "the entry left";
  const auto f = enqueue("n-leave", "F", "f", true);
  ASSERT_TRUE(leave("n-leave", "F", f.ticket, "f"));
  EXPECT_TRUE(listener->heard("n-leave", 10s));
}

// A NOTIFY is serialised database-wide at commit: a release sends one only while some session has
// registered waiters of its name (the wake-up hub does so for the names its process waits for).
TEST_P(QueueSqlTest, AReleaseNotifiesOnlyWhileSomeSessionWaitsForItsName) {
  const auto listener = listen();
  if (!listener) GTEST_SKIP() << "PostgreSQL's NOTIFY, not through a transaction-mode pooler";
  const auto& sql = detail::database_access::impl(*db_).sql();
  const auto cycle = [&] {
    const auto e = enqueue("n-wait", "F", "a", true);
    ASSERT_TRUE(release("n-wait", "F", e.ticket, "a", true));
  };
  cycle();
  EXPECT_FALSE(listener->heard("n-wait", 300ms)) << "nobody waits: no NOTIFY";
  database other = open();  // another process's listening session
  auto waiter = detail::database_access::impl(other).open();
  ASSERT_EQ(run(*waiter, sql.wakeup_register, {std::string("n-wait")}).rows.at(0).at(0), "t");
  cycle();
  EXPECT_TRUE(listener->heard("n-wait", 10s)) << "a waiter registered in another session";
  run(*waiter, sql.wakeup_unregister, {std::string("n-wait")});
  cycle();
  EXPECT_FALSE(listener->heard("n-wait", 300ms)) << "its last waiter left";
}

// ---- renew

TEST_P(QueueSqlTest, RenewExtendsOnlyTheSessionsLiveAutoRenewEntriesAndReturnsThemWithTheirKind) {
  const auto a = enqueue("a", "F", "o1", true, kLongLease, true, "s1");
  const auto b = enqueue("b", "R", "o1", false, kLongLease, true, "s1");
  enqueue("c", "R", "o1", true, kLongLease, false, "s1");  // not auto-renewed
  enqueue("d", "R", "o1", true, kLongLease, true, "s1");   // expired
  enqueue("a", "F", "o2", true, kLongLease, true, "s2");   // another session
  enqueue("e", "R", "o1", true, kLongLease, true, "s1");   // expires far later than a renewal would set
  for (const auto& [name, kind, owner] : {std::tuple<std::string, std::string, std::string>{"a", "F", "o1"},
                                          {"b", "R", "o1"},
                                          {"c", "R", "o1"},
                                          {"a", "F", "o2"}})
    set_expiry(name, kind, owner, now_plus(5));
  expire("d", "R", "o1");
  set_expiry("e", "R", "o1", now_plus(3600));
  const auto before = [&] {
    std::map<std::string, std::string> m;
    for (const auto& [name, kind, owner] : {std::tuple<std::string, std::string, std::string>{"a", "F", "o1"},
                                            {"b", "R", "o1"},
                                            {"c", "R", "o1"},
                                            {"d", "R", "o1"},
                                            {"a", "F", "o2"},
                                            {"e", "R", "o1"}})
      m[name + kind + owner] = expires_at(name, kind, owner);
    return m;
  }();
  const auto renewed = renew("s1");
  std::vector<std::string> expected = {"a|o1|" + std::to_string(a.ticket) + "|F",
                                       "b|o1|" + std::to_string(b.ticket) + "|R"};
  const auto e = as_int(sql(*db_, "SELECT ticket FROM " + queue() + " WHERE resource = 'e'").rows.at(0).at(0));
  expected.push_back("e|o1|" + std::to_string(e) + "|R");
  EXPECT_EQ(renewed, expected);
  EXPECT_GT(expires_at("a", "F", "o1"), before.at("aFo1")) << "about 55 s later";
  EXPECT_GT(expires_at("b", "R", "o1"), before.at("bRo1"));
  EXPECT_EQ(expires_at("c", "R", "o1"), before.at("cRo1")) << "not auto-renewed";
  EXPECT_EQ(expires_at("d", "R", "o1"), before.at("dRo1")) << "an expired entry is not resurrected";
  EXPECT_EQ(expires_at("a", "F", "o2"), before.at("aFo2")) << "another session";
  EXPECT_EQ(expires_at("e", "R", "o1"), before.at("eRo1")) << "a renewal never moves an expiry back";
}

TEST_P(QueueSqlTest, ARenewalDoesNotResurrectAnExpiredEntryThatACheckThenDeletes) {
  const auto a = enqueue("job", "F", "a", true, kLongLease, true, "s1");
  const auto b = enqueue("job", "F", "b", true, kLongLease, true, "s2");
  expire("job", "F", "a");
  EXPECT_TRUE(renew("s1").empty());
  EXPECT_TRUE(check("job", "F", b.ticket, "b").holds());
  EXPECT_EQ(check("job", "F", a.ticket, "a").mine, 0);
  EXPECT_TRUE(renew("s1").empty()) << "nothing left to renew";
  EXPECT_EQ(renew("s2").size(), 1u);
}

// ---- processes

// Processes enqueue at once, first on a few names they only enqueue on: right after its enqueue
// committed, each reads the tickets of the name, and every lower ticket must already be there (a
// lower ticket is committed before a higher one is drawn). Then all enqueue on one more name (a
// third of them writers), check until they hold, hold for a moment and release. The hold
// intervals, on the machine's monotonic clock, must follow ticket order wherever a writer is
// involved: no two writers, nor a writer and a reader, ever hold at once, and no one overtakes a
// writer.
TEST_P(QueueSqlTest, ProcessesEnqueuingAtOnceGetTicketsInCommitOrderAndHoldInTicketOrder) {
  constexpr int kProcesses = 10;
  constexpr int kSeenNames = 16;
  struct seen_round {
    std::int64_t ticket;
    int count;
    std::int64_t tickets[kProcesses];
  };
  struct slot {
    seen_round rounds[kSeenNames];
    std::int64_t ticket;
    std::int64_t enter_ns;
    std::int64_t exit_ns;
  };
  struct shared {
    std::atomic<int> enqueued;
    slot slots[kProcesses];
  };
  void* mem = ::mmap(nullptr, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* s = new (mem) shared{};
  const auto writer = [](int i) { return i % 3 == 0; };
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  db_.reset();
  process_group group;
  for (int i = 0; i < kProcesses; ++i) {
    group.spawn([&, i, s]() -> int {
      auto db = open();
      const std::string owner = "p" + std::to_string(i);
      auto& me = s->slots[i];
      {
        auto c = detail::database_access::impl(db).borrow();
        for (int n = 0; n < kSeenNames; ++n) {
          const std::string name = "seen" + std::to_string(n);
          auto& round = me.rounds[n];
          round.ticket = enqueue(*c, name, "F", owner, true).ticket;
          if (round.ticket <= 0) return 2;
          const auto seen = run(*c, "SELECT ticket FROM " + queue() + " WHERE resource = $1", {name});
          for (const auto& row : seen.rows)
            if (round.count < kProcesses) round.tickets[round.count++] = as_int(row.at(0));
        }
        me.ticket = enqueue(*c, "race", "R", owner, writer(i)).ticket;
        if (me.ticket <= 0) return 2;
      }
      s->enqueued.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + 90s;
      while (s->enqueued.load() < kProcesses) {  // every entry is in before anyone checks
        if (std::chrono::steady_clock::now() > deadline) return 3;
        std::this_thread::sleep_for(1ms);
      }
      for (;;) {
        if (std::chrono::steady_clock::now() > deadline) return 4;
        const auto t = check(db, "race", "R", me.ticket, owner);
        if (t.mine != 1) return 5;  // the entry was lost
        if (t.blockers == 0) break;
        std::this_thread::sleep_for(2ms);
      }
      me.enter_ns = now_ns();
      std::this_thread::sleep_for(10ms);
      me.exit_ns = now_ns();
      const auto left = release(db, "race", "R", me.ticket, owner, writer(i));
      return left == counts(0, 0) ? 0 : 6;
    });
  }
  group.start();
  ASSERT_EQ(group.wait_all(), kProcesses);
  for (int n = 0; n < kSeenNames; ++n) {
    std::set<std::int64_t> tickets;
    for (const auto& me : s->slots) tickets.insert(me.rounds[n].ticket);
    EXPECT_EQ(tickets.size(), static_cast<std::size_t>(kProcesses)) << "distinct tickets";
    for (int i = 0; i < kProcesses; ++i) {
      const auto& round = s->slots[i].rounds[n];
      const std::set<std::int64_t> seen(round.tickets, round.tickets + round.count);
      for (const auto t : tickets) {
        if (t >= round.ticket) continue;
        EXPECT_TRUE(seen.count(t)) << "seen" << n << ": p" << i << " (ticket " << round.ticket
                                   << ") did not see ticket " << t << " right after its enqueue committed";
      }
    }
  }
  int pairs = 0;
  for (int i = 0; i < kProcesses; ++i) {
    for (int j = 0; j < kProcesses; ++j) {
      const auto& a = s->slots[i];
      const auto& b = s->slots[j];
      if (a.ticket >= b.ticket || (!writer(i) && !writer(j))) continue;
      ++pairs;
      EXPECT_LT(a.exit_ns, b.enter_ns) << "p" << i << " (ticket " << a.ticket << (writer(i) ? ", writer" : ", reader")
                                       << ") still held when p" << j << " (ticket " << b.ticket
                                       << (writer(j) ? ", writer" : ", reader") << ") began to hold";
    }
  }
  EXPECT_EQ(pairs, 30) << "4 writers: 4 * 9 pairs with a writer, less the 6 counted twice";
  ::munmap(mem, sizeof(shared));
  db_.emplace(open());
  EXPECT_EQ(entries("resource = 'race'"), 0);
  EXPECT_EQ(entries(), kProcesses * kSeenNames);
}

INSTANTIATE_TEST_SUITE_P(Targets, QueueSqlTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

// Through PgBouncer in transaction mode (unprepared statements, any server connection per
// statement): every statement stands alone, so the queue works there too.
INSTANTIATE_TEST_SUITE_P(PgBouncer, QueueSqlTest, ::testing::ValuesIn(pgbouncer_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
