// sqllock behind PgBouncer in transaction mode (pool_mode = transaction, two server connections),
// the pooler scripts/test-servers.sh starts in front of the test PostgreSQL. What is specific to
// a pooler is here; the table-lock and row-lock contracts run through it in their own suites
// (the Pgbouncer instantiations of TableLockTest, TableLockProcessTest, RowLockTest and
// RowLockProcessTest).
//
// - Prepared statements: per-connection counter names ("sqllock_1", …), which sqllock used to
//   give them, make one client run another's statement through the pooler; names derived from the
//   statement text cannot, and ?prepare=off runs everything unnamed.
// - Session-level advisory locks stay with a server session other clients share: refused, or
//   declared lost, never granted to two clients. Transaction-level ones work.
// - The CLI through the pooler.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <thread>

#include <pqxx/nontransaction>
#include <pqxx/pqxx>

#include "common/uri.hpp"
#include "core/handle/open_session.hpp"
#include "driver/pg_statements.hpp"
#include "sqllock/adapters/pqxx.hpp"
#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/migrate.hpp"
#include "support/fresh_database.hpp"
#include "support/processes.hpp"
#include "support/program.hpp"
#include "support/stop_after.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

// PgBouncer's URI as the runtime role / as the owner; empty when none runs.
std::string bouncer_uri() { return test_setting("SQLLOCK_TEST_PGBOUNCER_URI").value_or(""); }
std::string bouncer_owner_uri() { return test_setting("SQLLOCK_TEST_PGBOUNCER_OWNER_URI").value_or(""); }

class PgbouncerTest : public ::testing::Test {
 protected:
  void SetUp() override { SQLLOCK_REQUIRE_SERVER(bouncer_uri()); }
};

// Each thread repeatedly runs its own statement on its own connection and checks the answer.
struct statement_race {
  std::atomic<int> right{0}, wrong{0}, name_errors{0}, other_errors{0};
  std::mutex mu;
  std::string first_other_error, first_name_error;

  void record_error(const std::string& what, bool name_error) {
    (name_error ? name_errors : other_errors).fetch_add(1);
    std::lock_guard lock(mu);
    auto& first = name_error ? first_name_error : first_other_error;
    if (first.empty()) first = what;
  }
};

// The hazard sqllock used to have: two clients prepare statements of different text under the
// same per-connection counter name. Through the pooler each execution runs whatever the server
// session it reaches has under that name.
TEST_F(PgbouncerTest, CounterNamedStatementsRunAnotherClientsStatementThroughThePooler) {
  statement_race race;
  // Each client's first statement under the same name, as counters made them ("sqllock_1");
  // new for each run, since the pool keeps its server sessions and their statements.
  const std::string name = unique_name("counter_name");
  auto client = [&](int me) {
    pqxx::connection c(bouncer_uri());
    std::string text = "SELECT ";  // appended: "lit" + std::string&& trips g++ 12's -Wrestrict at -O3
    text += std::to_string(me);
    text += " AS who";
    c.prepare(name, text);
    for (int i = 0; i < 200; ++i) {
      try {
        pqxx::nontransaction tx(c);
        const auto who = tx.exec_prepared(name)[0][0].as<int>();
        (who == me ? race.right : race.wrong).fetch_add(1);
      } catch (const pqxx::sql_error& e) {
        race.record_error(e.what(), detail::is_pg_statement_name_error(e.sqlstate()));
      }
    }
  };
  std::thread a(client, 1), b(client, 2), c(client, 3);
  a.join();
  b.join();
  c.join();
  EXPECT_GT(race.wrong.load() + race.name_errors.load(), 0)
      << "counter names never collided (" << race.right << " right answers); the pooler is not in transaction mode?";
  EXPECT_EQ(race.other_errors.load(), 0) << race.first_other_error;
  std::cout << "counter names through PgBouncer: " << race.right << " right, " << race.wrong
            << " ran another client's statement, " << race.name_errors << " failed with 26000/42P05\n";
}

TEST(PgStatementNames, AreAFunctionOfTheTextAndFitPostgresIdentifiers) {
  const std::string a = detail::pg_statement_name("SELECT $1");
  EXPECT_EQ(a, detail::pg_statement_name("SELECT $1"));
  EXPECT_NE(a, detail::pg_statement_name("SELECT $1 "));
  EXPECT_EQ(a.rfind("sqllock_", 0), 0u);
  EXPECT_LE(a.size(), 63u);
}

// Four threads, each on its own sqllock connection through the pooler, run different statements
// at once. With prepare=on a statement may fail (its name is missing on the server session it
// reached) but can never run as another; with prepare=off every statement runs, and right.
void race_sqllock_statements(const std::string& uri, statement_race& race) {
  auto client = [&](int me) {
    const auto spec = detail::parse_uri(uri);
    std::unique_ptr<detail::connection> conn;
    for (int i = 0; i < 150; ++i) {
      try {
        if (!conn || conn->broken()) conn = detail::open_connection(spec, 5s);
        // A text per client, so a statement run as another's answers with another number.
        std::string text = "SELECT CAST($1 AS bigint) * 10 + ";
        text += std::to_string(me);
        const detail::value arg[] = {std::int64_t{i}};
        const auto r = conn->exec(text, arg);
        (r.rows.at(0).at(0) == std::to_string(i * 10 + me) ? race.right : race.wrong).fetch_add(1);
      } catch (const backend_error& e) {
        const bool name_error = detail::is_pg_statement_name_error(e.sqlstate());
        race.record_error(e.what(), name_error);
        if (name_error) {
          EXPECT_NE(std::string(e.what()).find("prepare=off"), std::string::npos) << e.what();
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int me = 1; me <= 4; ++me) threads.emplace_back(client, me);
  for (auto& t : threads) t.join();
}

TEST_F(PgbouncerTest, TextDerivedNamesNeverRunAnotherStatementOnEitherDriver) {
  for (const std::string prefix : {"", "soci+"}) {
    statement_race race;
    race_sqllock_statements(prefix + bouncer_uri(), race);  // std::string + std::string
    EXPECT_EQ(race.wrong.load(), 0) << prefix << ": a statement ran as another";
    EXPECT_EQ(race.other_errors.load(), 0) << prefix << race.first_other_error;
    std::cout << (prefix.empty() ? "pqxx" : "soci") << " prepare=on through PgBouncer: " << race.right << " right, "
              << race.name_errors << " refused with a name error (e.g. " << race.first_name_error.substr(0, 80)
              << "…)\n";
  }
}

TEST_F(PgbouncerTest, UnnamedStatementsAllRunRightOnEitherDriver) {
  for (const std::string prefix : {"", "soci+"}) {
    statement_race race;
    race_sqllock_statements(prefix + with_query(bouncer_uri(), "prepare=off"), race);  // std::string + std::string
    EXPECT_EQ(race.wrong.load(), 0) << prefix;
    EXPECT_EQ(race.name_errors.load() + race.other_errors.load(), 0)
        << prefix << race.first_name_error << race.first_other_error;
    EXPECT_EQ(race.right.load(), 4 * 150) << prefix;
  }
}

// A counter in a file, for processes that share nothing but a lock.
long read_counter(const std::filesystem::path& file) { return std::stol(read_text(file)); }
void write_counter(const std::filesystem::path& file, long v) { std::ofstream(file, std::ios::trunc) << v; }

// Both PostgreSQL drivers with ?prepare=off.
std::vector<std::string> pooled_uris() {
  const std::string uri = with_query(bouncer_uri(), "prepare=off");
  std::string soci = "soci+";
  soci += uri;
  return {uri, soci};
}

// Client A holds a session-level advisory lock, which stays with one server session of the
// pool. Client B's attempts reach that server session (the pooler lends the most recently used
// one) or the other: either way B is never granted the lock — refused with not_supported on A's
// server session, or false elsewhere.
TEST_F(PgbouncerTest, ASessionAdvisoryLockIsNeverGrantedToASecondClient) {
  for (const auto& uri : pooled_uris()) {
    const auto key = advisory_key::from_name(unique_name("pooled"));
    database a(uri);
    advisory_lock held(a, key);
    bool a_holds = false;
    try {
      a_holds = held.try_lock();
    } catch (const not_supported&) {
      // A's own statement reached a server session that another client tagged earlier.
    }
    ASSERT_TRUE(a_holds) << uri << ": the first client could not take a free lock";
    int refused = 0, busy = 0;
    for (int i = 0; i < 40; ++i) {
      database b(uri);  // a new client each time, as another process would be
      advisory_lock other(b, key);
      try {
        EXPECT_FALSE(other.try_lock()) << uri << ": a second client was granted a held lock";
        ++busy;
      } catch (const not_supported& e) {
        EXPECT_NE(std::string(e.what()).find("PgBouncer"), std::string::npos) << e.what();
        ++refused;
      }
    }
    EXPECT_GT(refused, 0) << uri << ": no attempt reached the holder's server session";
    std::cout << uri << ": 40 attempts by other clients: " << refused << " refused (holder's server session), " << busy
              << " saw it held\n";
    try {
      held.unlock();
    } catch (const error&) {
      // Its release may reach the other server session; the lock then stays with the first.
    }
  }
}

// A holder whose keepalive ping reaches a server session other than the one holding its lock
// cannot release or keep it: the lock is declared lost (the stop token and on_lost fire), so the
// holder stops its work instead of believing it still holds.
TEST_F(PgbouncerTest, AHolderWhosePingReachesAnotherServerSessionIsDeclaredLost) {
  for (const auto& uri : pooled_uris()) {
    database a(uri);
    advisory_lock_options o;
    o.keepalive = 50ms;
    std::atomic<bool> lost{false};
    o.on_lost = [&] { lost = true; };
    advisory_lock held(a, unique_name("moved"), o);
    ASSERT_TRUE(held.try_lock()) << uri;
    // Other clients keep both server sessions busy in turn, so the holder's pings soon reach
    // the one it does not hold the lock on.
    std::atomic<bool> stop{false};
    std::vector<std::thread> traffic;
    for (int t = 0; t < 2; ++t) {
      traffic.emplace_back([&] {
        database other(uri);
        while (!stop) sql(other, "SELECT pg_sleep(0.005)");
      });
    }
    EXPECT_TRUE(eventually([&] { return lost.load(); }, 15s)) << uri << ": the moved session was never noticed";
    EXPECT_TRUE(held.lost_token().stop_requested()) << uri;
    stop = true;
    for (auto& t : traffic) t.join();
    try {
      held.unlock();
    } catch (const error&) {
    }
  }
}

// Transaction-level advisory locks live as long as a transaction, which the pooler keeps on one
// server session. Four processes increment a counter with a pause between read and write: in a
// file under with_advisory_xact_lock (whose function runs no SQL), and in a table inside the
// application's own transaction (adapters/pqxx.hpp). Neither loses an update.
TEST_F(PgbouncerTest, TransactionAdvisoryLocksExcludeAcrossProcesses) {
  constexpr int kProcesses = 4, kRounds = 25;
  for (const auto& uri : pooled_uris()) {
    const auto file = make_temp_dir("sqllock-xact") / "counter";
    write_counter(file, 0);
    const std::string key = unique_name("xfile");
    process_group group;
    for (int p = 0; p < kProcesses; ++p) {
      group.spawn([&] {
        database db(uri);
        for (int i = 0; i < kRounds; ++i) {
          with_advisory_xact_lock(db, key, [&] {
            const long v = read_counter(file);
            std::this_thread::sleep_for(500us);
            write_counter(file, v + 1);
          });
        }
        return 0;
      });
    }
    EXPECT_EQ(group.wait_all(), kProcesses) << uri;
    EXPECT_EQ(read_counter(file), kProcesses * kRounds) << uri;
  }

  // The application's transaction: the lock and the counter's statements share its server session.
  const std::string counter = unique_name("xcounter");
  {
    database owner(bouncer_owner_uri());
    sql(owner, "CREATE TABLE " + counter + " (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
    sql(owner, "INSERT INTO " + counter + " (id, v) VALUES (1, 0)");
  }
  process_group group;
  for (int p = 0; p < kProcesses; ++p) {
    group.spawn([&] {
      pqxx::connection c(bouncer_owner_uri());
      for (int i = 0; i < kRounds; ++i) {
        pqxx::work tx(c);
        advisory_xact_lock(tx, advisory_key::from_name(counter));
        const auto v = tx.exec("SELECT v FROM " + counter + " WHERE id = 1")[0][0].as<long>();
        std::this_thread::sleep_for(500us);
        tx.exec_params("UPDATE " + counter + " SET v = $1 WHERE id = 1", v + 1);
        tx.commit();
      }
      return 0;
    });
  }
  EXPECT_EQ(group.wait_all(), kProcesses);
  database db(bouncer_owner_uri());
  EXPECT_EQ(sql(db, "SELECT v FROM " + counter + " WHERE id = 1").rows.at(0).at(0),
            std::to_string(kProcesses * kRounds));
}

// A stop ends a transaction-level advisory lock's wait through the pooler too. No cancel request
// can be relied on there (the pool's two server connections are the holder's and the waiter's),
// so the wait runs in short slices and sees the stop between them.
TEST_F(PgbouncerTest, AStopEndsATransactionAdvisoryLockWaitThroughThePooler) {
  for (const auto& uri : pooled_uris()) {
    SCOPED_TRACE(uri);
    database holder_db(uri), db(uri);
    const std::string key = unique_name("xstop");
    std::promise<void> held, done;
    std::thread holder([&] {
      with_advisory_xact_lock(holder_db, key, [&] {
        held.set_value();
        done.get_future().wait();
      });
    });
    held.get_future().wait();
    std::stop_source stop;
    bool ran = true;
    std::chrono::steady_clock::duration took{};
    {
      const stop_after stopper(stop, 300ms);
      ran = with_advisory_xact_lock(db, key, stop.get_token(), [] {});
      took = std::chrono::steady_clock::now() - stopper.started();
    }
    done.set_value();
    holder.join();
    EXPECT_FALSE(ran);
    EXPECT_GE(took, 300ms) << "ended before the stop";
    EXPECT_LT(took, scaled(1300ms)) << "the stop did not end the wait promptly";
    EXPECT_TRUE(try_with_advisory_xact_lock_for(db, key, 5s, [] {})) << "the stopped wait left a lock behind";
  }
}

// The CLI as a new user would run it: migrate, four concurrent `sqllock run` loops, status and
// reap, all through the pooler with ?prepare=off; without it, every failure names the cause.
TEST_F(PgbouncerTest, TheCliRunsThroughThePooler) {
  const auto dir = make_temp_dir("sqllock-pgbouncer-cli");
  const std::string table = unique_name("cli");
  const std::string owner = with_query(bouncer_owner_uri(), "prepare=off");
  const std::string uri = with_query(bouncer_uri(), "prepare=off");
  ASSERT_EQ(run_program({SQLLOCK_CLI, "migrate", "--db", owner, "--table", table}, dir).code, 0);
  std::vector<std::unique_ptr<program>> loops;
  for (int p = 0; p < 4; ++p) {
    loops.push_back(std::make_unique<program>(
        std::vector<std::string>{"/bin/sh", "-c",
                                 "for i in 1 2 3 4 5 6 7 8; do \"$0\" run --db \"$1\" --table \"$2\" --lock x "
                                 "--wait 30s -- true || exit $?; done",
                                 SQLLOCK_CLI, uri, table},
        make_temp_dir("sqllock-pgbouncer-loop")));
  }
  for (auto& loop : loops) EXPECT_EQ(loop->wait(120s), 0) << loop->err();
  const auto status = run_program({SQLLOCK_CLI, "status", "--db", uri, "--table", table}, dir);
  EXPECT_EQ(status.code, 0) << status.err;
  const auto reap = run_program({SQLLOCK_CLI, "reap", "--db", uri, "--table", table}, dir);
  EXPECT_EQ(reap.code, 0) << reap.err;

  // Without ?prepare=off: each run either works or fails saying what to do — never another error.
  std::vector<std::unique_ptr<program>> named;
  for (int p = 0; p < 4; ++p) {
    std::string lock = "y";
    lock += std::to_string(p);
    named.push_back(std::make_unique<program>(std::vector<std::string>{SQLLOCK_CLI, "run", "--db", bouncer_uri(),
                                                                       "--table", table, "--lock", lock, "--", "true"},
                                              make_temp_dir("sqllock-pgbouncer-named")));
  }
  for (auto& run : named) {
    const int code = run->wait(60s);
    if (code != 0) {
      EXPECT_NE(run->err().find("prepare=off"), std::string::npos) << run->err();
    }
  }
}

}  // namespace
}  // namespace sqllock::test
