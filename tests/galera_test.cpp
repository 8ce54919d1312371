// sqllock on a three-node MariaDB Galera cluster (fixture `galera`, scripts/ha-servers.sh; node i
// at SQLLOCK_TEST_GALERA_URI_i). GET_LOCK and SELECT … FOR UPDATE are node-local there, so
// named_lock and the row locks must refuse the cluster unless told every client uses one node
// (?galera=pinned; set_caller_row_locks_galera_pinned for the adapters); table_lock must exclude
// across nodes — processes on different nodes never hold one name at once, fences rise in grant
// order, a certification conflict (1213) is contention or a retryable error, never a grant — also
// while a node is killed and rejoins.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <soci/mysql/soci-mysql.h>
#include <soci/soci.h>

#include "common/uri.hpp"
#include "driver/mysql/cppconn.hpp"
#include "sqllock/adapters/mysql.hpp"
#include "sqllock/adapters/soci.hpp"
#include "sqllock/error.hpp"
#include "sqllock/migrate.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/table_lock.hpp"
#include "support/expect_error.hpp"
#include "support/fresh_database.hpp"
#include "support/processes.hpp"
#include "support/program.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr int kNodes = 3;

// `uri` with one more query parameter.
std::string with_param(const std::string& uri, const std::string& param) {
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + param;
}

// The Value of a one-row SHOW … LIKE answer ("" when there is none).
std::string show(const database& db, const std::string& statement) {
  const auto r = sql(db, statement);
  return r.rows.empty() || r.rows[0].size() < 2 ? "" : r.rows[0][1].value_or("");
}
std::int64_t show_int(const database& db, const std::string& statement) {
  const std::string v = show(db, statement);
  return v.empty() ? -1 : std::stoll(v);
}

// The ha-servers.sh command `what` on node `node` (galera-kill, galera-start), with the script and
// directory the fixture's env file names (the build's, when it names none).
void ha(const std::string& what, int node) {
  const auto script = test_setting("SQLLOCK_TEST_HA_SCRIPT").value_or(SQLLOCK_HA_SERVERS_SCRIPT);
  const auto state = test_setting("SQLLOCK_TEST_HA_DIR").value_or(SQLLOCK_GALERA_STATE_DIR);
  const auto dir = make_temp_dir("sqllock-galera-ha");
  const auto r = run_program({script, what, state, std::to_string(node)}, dir, {}, 120s);
  ASSERT_EQ(r.code, 0) << "ha-servers.sh " << what << " " << node << ":\n" << r.out << r.err;
}

class GaleraTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int n = 1; n <= kNodes; ++n) {
      const auto owner = test_setting("SQLLOCK_TEST_GALERA_URI_" + std::to_string(n));
      if (!owner) {
        if (servers_required()) FAIL() << "SQLLOCK_TEST_GALERA_URI_" << n << " not set (fixture galera)";
        GTEST_SKIP() << "no Galera cluster configured (fixture galera, scripts/ha-servers.sh)";
      }
      owner_uris_.push_back(*owner);
      // Locks run as the least-privilege role when there is one: the probe must work for it.
      uris_.push_back(test_setting("SQLLOCK_TEST_GALERA_RUNTIME_URI_" + std::to_string(n)).value_or(*owner));
    }
    // A test that killed a node waits for its rejoin; this is the guard for anything else.
    ASSERT_TRUE(cluster_complete(60s)) << "the cluster does not have its three nodes Synced";
    table_ = unique_name("gl");
    {
      auto owner = open_owner(1);
      migrate(owner);
    }
    // Migrations replicate by TOI, their rows by certification; wait until every node has the
    // fence counter row, which every acquire's trigger updates.
    for (int n = 1; n <= kNodes; ++n) {
      auto db = open(n);
      ASSERT_TRUE(eventually([&] { return fence_rows(db) == 1; }, 10s)) << "node " << n;
    }
  }

  const std::string& uri(int node) const { return uris_.at(static_cast<std::size_t>(node - 1)); }

  database_options options(std::size_t pool_size = 4) const {
    database_options o;
    o.table = table_;
    o.pool_size = pool_size;
    return o;
  }
  // A handle on node `node` (1-based), with ?galera=pinned when `pinned`.
  database open(int node, bool pinned = false, std::size_t pool_size = 4) const {
    return database(pinned ? with_param(uri(node), "galera=pinned") : uri(node), options(pool_size));
  }

  // The same as the schema owner, for migrations and DDL.
  database open_owner(int node) const {
    return database(owner_uris_.at(static_cast<std::size_t>(node - 1)), options());
  }

  std::int64_t fence_rows(const database& db) const {
    return std::stoll(sql(db, "SELECT COUNT(*) FROM " + table_ + "_fence").rows.at(0).at(0).value());
  }
  std::int64_t row_lock_rows(const database& db) const {
    return std::stoll(sql(db, "SELECT COUNT(*) FROM " + table_ + "_rows").rows.at(0).at(0).value());
  }

  // Every node answers, is Synced and sees three nodes.
  bool cluster_complete(std::chrono::milliseconds timeout) const {
    return eventually(
        [&] {
          try {
            for (int n = 1; n <= kNodes; ++n) {
              database db(uri(n));
              if (show(db, "SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'") != "Synced" ||
                  show(db, "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'") != "3")
                return false;
            }
            return true;
          } catch (const std::exception&) {
            return false;
          }
        },
        timeout);
  }

  std::vector<std::string> uris_;  // as the runtime role (or the owner when there is none)
  std::vector<std::string> owner_uris_;
  std::string table_;
};

// ---- named_lock ---------------------------------------------------------------------------------

TEST_F(GaleraTest, NamedLockIsRefusedOnEveryNode) {
  for (int n = 1; n <= kNodes; ++n) {
    SCOPED_TRACE("node " + std::to_string(n));
    auto db = open(n);
    named_lock lock(db, "job");
    const std::initializer_list<std::string_view> says = {
        "named lock 'job' refused", "is a node of a 3-node Galera cluster (wsrep_on=ON, wsrep_cluster_size=3)",
        "GET_LOCK only locks on the node that runs it", "Use sqllock::table_lock, which is safe on Galera",
        "add ?galera=pinned to the URI if every client of these locks connects to the same node"};
    const auto m = expect_error<not_supported>([&] { (void)lock.try_lock(); }, says, "try_lock");
    EXPECT_NE(m.find(detail::parse_uri(uri(n)).display), std::string::npos) << m;
    expect_error<not_supported>([&] { lock.lock(); }, says, "lock");
    expect_error<not_supported>([&] { (void)lock.try_lock_for(1s); }, says, "try_lock_for");
    EXPECT_FALSE(lock.holds());
    EXPECT_EQ(lock.count(), 0);
    // Nothing was taken on the server either.
    EXPECT_EQ(show(db, "SELECT 'x', COALESCE(IS_USED_LOCK('" + lock.server_name() + "'), 0)"), "0");
  }
}

TEST_F(GaleraTest, NamedLockWorksWithThePinnedOptIn) {
  // Two handles (two owners) on one node exclude each other, as on a plain server.
  auto a_db = open(1, true);
  auto b_db = open(1, true);
  named_lock a(a_db, "job");
  named_lock b(b_db, "job");
  ASSERT_TRUE(a.try_lock());
  EXPECT_FALSE(b.try_lock());
  EXPECT_FALSE(b.try_lock_for(300ms));
  a.unlock();
  ASSERT_TRUE(b.try_lock_for(5s));
  b.unlock();
}

TEST_F(GaleraTest, WhyTheyAreRefusedGetLockAndForUpdateDoNotExcludeAcrossNodes) {
  // The opt-in is a promise that all clients use one node. Broken, both nodes grant the lock.
  auto n1 = open(1, true);
  auto n2 = open(2, true);
  named_lock a(n1, "node-local");
  named_lock b(n2, "node-local");
  ASSERT_TRUE(a.try_lock());
  EXPECT_TRUE(b.try_lock()) << "GET_LOCK excluded across nodes: the refusal may no longer be needed";
  b.unlock();
  a.unlock();

  // The row exists on both nodes first: were node 2 to create it (REPLACE) while node 1 holds it,
  // that write's certification would abort node 1's transaction, which is not what is shown here.
  with_row_lock(n1, "row-node-local", [](row_lock_tx&) {});
  ASSERT_TRUE(eventually([&] { return row_lock_rows(n2) == 1; }, 10s)) << "node 2 never saw the row";

  std::atomic<bool> a_holds{false}, b_done{false};
  std::string holder_error;  // what node 1's row lock threw, if it did
  std::thread holder([&] {
    try {
      with_row_lock(n1, "row-node-local", [&](row_lock_tx&) {
        a_holds = true;
        eventually([&] { return b_done.load(); }, 10s);
      });
    } catch (const std::exception& e) {
      holder_error = e.what();
      b_done = true;
    }
  });
  bool b_ran = false;
  std::string b_error;
  // Both threads end whatever happens: an assertion returning with `holder` joinable would abort.
  if (eventually([&] { return a_holds.load() || b_done.load(); }, 10s) && a_holds) {
    try {
      b_ran = try_with_row_lock(n2, "row-node-local", [](row_lock_tx&) {});
    } catch (const std::exception& e) {
      b_error = e.what();
    }
  }
  b_done = true;
  holder.join();
  ASSERT_EQ(holder_error, "") << "node 1's row lock failed";
  ASSERT_TRUE(a_holds.load()) << "node 1 never held the row lock";
  ASSERT_EQ(b_error, "") << "node 2's attempt failed";
  EXPECT_TRUE(b_ran) << "FOR UPDATE excluded across nodes: the refusal may no longer be needed";
}

TEST_F(GaleraTest, AHandleAsksTheServerOnce) {
  // Global counters of node 2, which nothing else uses while this test runs (RESOURCE_LOCK).
  auto watcher = open(2);
  const std::string variables = "SHOW GLOBAL STATUS LIKE 'Com_show_variables'";
  const std::string status = "SHOW GLOBAL STATUS LIKE 'Com_show_status'";

  auto db = open(2);
  const auto variables_before = show_int(watcher, variables);
  const auto status_before = show_int(watcher, status);
  // The row locks first: a named lock's session keeps its connection for the next pin, and a row
  // lock after it would open another connection, whose setup counts as a SHOW VARIABLES too.
  for (int i = 0; i < 3; ++i) EXPECT_THROW(with_row_lock(db, "once", [](row_lock_tx&) {}), not_supported);
  named_lock lock(db, "once");
  for (int i = 0; i < 3; ++i) EXPECT_THROW((void)lock.try_lock(), not_supported);
  // One probe for six refusals: a SHOW STATUS and a SHOW VARIABLES (the watcher's two reads since
  // status_before are SHOW STATUS statements too, the last one counting itself).
  EXPECT_EQ(show_int(watcher, variables) - variables_before, 1);
  EXPECT_EQ(show_int(watcher, status) - status_before, 3);

  // A pinned handle never asks; table_lock never asks.
  auto pinned = open(2, true);
  const auto pinned_before = show_int(watcher, status);
  named_lock p(pinned, "once");
  ASSERT_TRUE(p.try_lock());
  p.unlock();
  table_lock t(db, "once");
  ASSERT_TRUE(t.try_lock());
  t.unlock();
  EXPECT_EQ(show_int(watcher, status) - pinned_before, 1);
}

// ---- row locks ----------------------------------------------------------------------------------

// SOCI's mysql connect string for a mysql:// URI.
std::string soci_connect(const std::string& uri) {
  const auto spec = detail::parse_uri(uri);
  return "host=" + spec.host + " port=" + std::to_string(spec.port.value_or(3306)) + " user=" + spec.user +
         " password=" + spec.password + " db=" + spec.database;
}

std::unique_ptr<sql::Connection> cppconn_connect(const std::string& uri) {
  const auto spec = detail::parse_uri(uri);
  auto* driver = sql::mysql::get_mysql_driver_instance();
  std::unique_ptr<sql::Connection> conn(
      driver->connect("tcp://" + spec.host + ":" + std::to_string(spec.port.value_or(3306)), spec.user, spec.password));
  conn->setSchema(spec.database);
  return conn;
}

// Resets the adapters' process-wide opt-in however the test ends.
struct caller_opt_in {
  caller_opt_in() { set_caller_row_locks_galera_pinned(true); }
  ~caller_opt_in() { set_caller_row_locks_galera_pinned(false); }
};

TEST_F(GaleraTest, RowLocksAreRefusedOnEveryNode) {
  const std::initializer_list<std::string_view> says = {
      "row lock 'account:42' refused", "is a node of a 3-node Galera cluster (wsrep_on=ON, wsrep_cluster_size=3)",
      "FOR UPDATE only locks on the node that runs it", "Use sqllock::table_lock, which is safe on Galera",
      "if every client of these locks connects to the same node"};
  for (int n = 1; n <= kNodes; ++n) {
    SCOPED_TRACE("node " + std::to_string(n));
    auto db = open(n);
    bool ran = false;
    const auto body = [&](row_lock_tx&) { ran = true; };
    auto m = expect_error<not_supported>([&] { with_row_lock(db, "account:42", body); }, says, "with_row_lock");
    EXPECT_NE(m.find("add ?galera=pinned to the URI"), std::string::npos) << m;
    expect_error<not_supported>([&] { (void)try_with_row_lock(db, "account:42", body); }, says, "try_with_row_lock");
    expect_error<not_supported>([&] { (void)try_with_row_lock_for(db, "account:42", 1s, body); }, says,
                                "try_with_row_lock_for");
    EXPECT_FALSE(ran);

    // The adapters, in the application's own transaction.
    soci::session session(soci::mysql, soci_connect(uri(n)));
    {
      soci::transaction tr(session);
      m = expect_error<not_supported>([&] { lock_row(session, "account:42", table_); }, says, "soci lock_row");
      EXPECT_NE(m.find("the server of the application's SOCI session"), std::string::npos) << m;
      EXPECT_NE(m.find("call sqllock::set_caller_row_locks_galera_pinned(true)"), std::string::npos) << m;
      expect_error<not_supported>([&] { (void)try_lock_row(session, "account:42", table_); }, says,
                                  "soci try_lock_row");
      tr.rollback();
    }
    auto conn = cppconn_connect(uri(n));
    conn->setAutoCommit(false);
    m = expect_error<not_supported>([&] { lock_row(conn.get(), "account:42", table_); }, says, "cppconn lock_row");
    EXPECT_NE(m.find("the server of the application's Connector/C++ connection"), std::string::npos) << m;
    expect_error<not_supported>([&] { (void)try_lock_row_for(conn.get(), "account:42", 1s, table_); }, says,
                                "cppconn try_lock_row_for");
    conn->rollback();
    // Refused before anything was written: not even the name's row exists.
    EXPECT_EQ(row_lock_rows(db), 0);
  }
}

TEST_F(GaleraTest, RowLocksWorkWithTheOptIn) {
  auto a_db = open(1, true);
  auto b_db = open(1, true);
  {
    auto owner = open_owner(1);
    sql(owner, "CREATE TABLE " + table_ + "_data (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
    sql(owner, "INSERT INTO " + table_ + "_data (id, v) VALUES (1, 0)");
  }

  // with_row_lock: runs and commits; a second transaction on the same node is refused meanwhile.
  std::optional<bool> b_got;
  with_row_lock(a_db, "account:42", [&](row_lock_tx& tx) {
    tx.exec("UPDATE " + table_ + "_data SET v = v + 1 WHERE id = 1");
    b_got = try_with_row_lock(b_db, "account:42", [](row_lock_tx&) {});
  });
  EXPECT_EQ(b_got, false);
  EXPECT_EQ(sql(a_db, "SELECT v FROM " + table_ + "_data WHERE id = 1").rows.at(0).at(0), "1");

  // The adapters, after the process-wide opt-in.
  caller_opt_in opt_in;
  soci::session session(soci::mysql, soci_connect(uri(1)));
  auto conn = cppconn_connect(uri(1));
  {
    soci::transaction tr(session);
    lock_row(session, "account:42", table_);
    conn->setAutoCommit(false);
    EXPECT_FALSE(try_lock_row(conn.get(), "account:42", table_)) << "the SOCI transaction holds it";
    conn->rollback();
    tr.commit();
  }
  EXPECT_TRUE(try_lock_row(conn.get(), "account:42", table_));
  conn->commit();
}

// ---- guards ---------------------------------------------------------------------------------------

// A guard on a multi-node cluster writes the lock row (a locking read would hold back nothing on
// the other nodes), so certification keeps the guarded transaction on node 1 and a takeover of
// the expired lease on node 2 from both committing: either the guarded transaction fails at its
// commit (the takeover certified first) or the takeover comes after it. The same for the SQL
// guard. With the opt-in (every client on one node) the guard is a locking read there, which
// holds back a takeover on that node until the commit.
struct guarded_takeover {
  bool committed = false;       // the guarded transaction's commit succeeded
  bool granted = false;         // the other owner got the lock
  bool granted_before = false;  // … before the guarded transaction's commit was sent
  bool data_written = false;    // the guarded transaction's row is in the data table
};

class GaleraGuardTest : public GaleraTest {
 protected:
  // a holds "invoice" on node 1 (lease 1 s, not renewed); a transaction on node 1's SOCI session
  // guards it (`sql_guard`: with SELECT <table>_guard(name, fence), else guard(session, a)), waits
  // past the lease, writes a row and commits, while b on `b_node` tries to take the lock (`guarded`
  // false: the control, the same transaction without a guard).
  guarded_takeover run(int b_node, bool pinned, bool sql_guard, bool guarded = true) {
    {
      auto owner = open_owner(1);
      sql(owner, "CREATE TABLE IF NOT EXISTS " + table_ + "_data (id INTEGER PRIMARY KEY)");
    }
    auto a_db = open(1, pinned);
    auto b_db = open(b_node, pinned);
    const std::string name = "invoice-" + std::to_string(++round_);
    table_lock a(a_db, name, {.ttl = 1s, .auto_renew = false});
    table_lock b(b_db, name);
    EXPECT_TRUE(a.try_lock());
    soci::session session(soci::mysql, soci_connect(uri(1)));
    guarded_takeover out;
    std::atomic<bool> granted{false};
    std::chrono::steady_clock::time_point granted_at{};
    {
      soci::transaction tr(session);
      if (!guarded) {
        // the control: no guard
      } else if (sql_guard) {
        long long fence = a.fence();
        long long got = 0;
        session << "SELECT " + table_ + "_guard(:n, :f)", soci::use(name), soci::use(fence), soci::into(got);
      } else {
        guard(session, a);
      }
      std::this_thread::sleep_for(1300ms);  // a's lease ran out
      std::thread contender([&] {
        try {
          if (b.try_lock_for(10s)) {
            granted_at = std::chrono::steady_clock::now();
            granted = true;
            b.release();
          }
        } catch (const std::exception& e) {
          ADD_FAILURE() << "the contender's attempt threw: " << e.what();
        }
      });
      std::this_thread::sleep_for(1s);
      const auto commit_sent = std::chrono::steady_clock::now();
      try {
        session << "INSERT INTO " + table_ + "_data (id) VALUES (" + std::to_string(round_) + ")";
        tr.commit();
        out.committed = true;
      } catch (const soci::soci_error&) {
        // certification lost to the takeover, or the applier aborted us: nothing committed
      }
      contender.join();
      out.granted = granted.load();
      out.granted_before = out.granted && granted_at < commit_sent;
    }
    auto check = open(1);
    out.data_written = std::stoll(
                           sql(check, "SELECT COUNT(*) FROM " + table_ + "_data WHERE id = " + std::to_string(round_))
                               .rows.at(0)
                               .at(0)
                               .value()) == 1;
    EXPECT_THROW(a.release(), not_held) << "a's lease ran out";
    return out;
  }
  int round_ = 0;
};

TEST_F(GaleraGuardTest, AGuardedTransactionAndATakeoverOnAnotherNodeNeverBothCommit) {
  for (const bool sql_guard : {false, true}) {
    SCOPED_TRACE(sql_guard ? "SQL guard" : "guard(session, lock)");
    const auto r = run(2, false, sql_guard);
    std::cout << (sql_guard ? "SQL guard" : "guard(session, lock)") << ": the guarded transaction "
              << (r.committed ? "committed" : "failed at its commit") << "; the takeover on node 2 came "
              << (r.granted_before ? "before" : "after") << " the commit was sent\n";
    EXPECT_EQ(r.committed, r.data_written);
    EXPECT_FALSE(r.committed && r.granted_before)
        << "the guarded transaction committed after the other node's owner was granted the lock";
    EXPECT_TRUE(r.granted) << "the takeover never happened";
  }
}

// The control: unguarded, the transaction commits its write after the other node's owner was
// granted the lock.
TEST_F(GaleraGuardTest, WithoutAGuardTheWriteCommitsAfterATakeoverOnAnotherNode) {
  const auto r = run(2, false, false, false);
  EXPECT_TRUE(r.committed && r.granted_before);
}

TEST_F(GaleraGuardTest, WithTheOptInTheGuardHoldsBackATakeoverOnItsNode) {
  caller_opt_in opt_in;
  const auto r = run(1, true, false);
  EXPECT_TRUE(r.committed);
  EXPECT_FALSE(r.granted_before) << "taken over while the guarded transaction was open";
  EXPECT_TRUE(r.granted);
}

// ---- table_lock across nodes --------------------------------------------------------------------

// What the processes of a contention run share (an anonymous shared mapping made before fork).
struct board {
  std::atomic<int> holders{0};   // processes inside the critical section now
  std::atomic<int> overlaps{0};  // entries that found another holder inside
  std::atomic<std::int64_t> last_fence{0};
  std::atomic<int> fence_regressions{0};  // grants whose fence was not above the previous grant's
  std::atomic<bool> stop{false};
  std::atomic<int> last_holder{0};  // the node of the latest grant
  std::atomic<int> handoffs{0};     // grants on another node than the previous grant
  std::atomic<int> grants[kNodes] = {};
  std::atomic<int> retryable[kNodes] = {};                // 1213 (certification conflict) surfaced as an error
  std::atomic<int> failures[kNodes] = {};                 // any other error
  std::atomic<std::int64_t> last_grant_ms[kNodes] = {};   // steady clock, ms since `epoch`
  std::atomic<std::int64_t> max_gap_after_kill_ms{0};     // longest pause between survivors' grants
  std::atomic<std::int64_t> max_gap_end_ms{0};            // when it ended
  std::atomic<std::int64_t> restart_ms{-1};               // when node 3's restart began
  std::atomic<std::int64_t> max_gap_after_restart_ms{0};  // longest pause since then
  std::atomic<std::int64_t> kill_ms{-1};                  // when node 3 was killed (-1: not yet)
  std::atomic<std::int64_t> survivor_last_ms{0};
  steady::time_point epoch;
  char first_failure[kNodes][240] = {};
};

class shared_board {
 public:
  shared_board() {
    void* p = ::mmap(nullptr, sizeof(board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    b_ = new (p) board;
    b_->epoch = steady::now();
  }
  ~shared_board() { ::munmap(b_, sizeof(board)); }
  board* operator->() const { return b_; }
  board& operator*() const { return *b_; }

 private:
  board* b_;
};

std::int64_t ms_since(const board& b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - b.epoch).count();
}

// Sleeps a random time up to `most`.
void pause(std::minstd_rand& rng, std::chrono::milliseconds most) {
  std::uniform_int_distribution<long long> us(0, std::chrono::microseconds(most).count());
  std::this_thread::sleep_for(std::chrono::microseconds(us(rng)));
}

void note_failure(board& b, int slot, const std::exception& e) {
  if (b.failures[slot]++ == 0) std::snprintf(b.first_failure[slot], sizeof b.first_failure[slot], "%s", e.what());
}

// One contender: node `node` (1-based), lock `name`, until b.stop. Survivors are the nodes that
// are never killed: their grants feed the stall measurement.
int contend(board& b, const std::string& uri, int node, const std::string& table, const std::string& name,
            bool survivor) {
  const int slot = node - 1;
  database_options o;
  o.table = table;
  o.connect_timeout = 2s;
  table_lock_options lo;
  lo.ttl = 3s;                                        // a holder on a killed node blocks the name for at most this long
  lo.on_unlock_error = [](const std::exception&) {};  // a release stalled past the lease: counted below
  std::optional<database> db;
  std::minstd_rand rng(static_cast<unsigned>(::getpid()));
  while (!b.stop) {
    try {
      if (!db) db.emplace(uri, o);
      table_lock lock(*db, name, lo);
      // Polling with short random pauses (rather than try_lock_for, whose backoff grows to 500 ms)
      // keeps both nodes' upserts of the lock row racing, and lets the lock change nodes often.
      if (!lock.try_lock()) {
        pause(rng, 3ms);
        continue;
      }
      // Inside: nobody else may be.
      if (b.holders.fetch_add(1) != 0) b.overlaps++;
      if (b.last_holder.exchange(node) != node) b.handoffs++;
      const auto fence = lock.fence();
      if (fence <= b.last_fence.load()) b.fence_regressions++;
      b.last_fence.store(fence);
      const auto now = ms_since(b);
      b.grants[slot]++;
      b.last_grant_ms[slot] = now;
      if (survivor) {
        const auto previous = b.survivor_last_ms.exchange(now);
        if (b.kill_ms >= 0 && previous > 0) {
          const auto gap = now - std::max(previous, b.kill_ms.load());
          if (gap > b.max_gap_after_kill_ms) {
            b.max_gap_after_kill_ms = gap;
            b.max_gap_end_ms = now;
          }
          if (b.restart_ms >= 0 && gap > b.max_gap_after_restart_ms && previous >= b.restart_ms)
            b.max_gap_after_restart_ms = gap;
        }
      }
      std::this_thread::sleep_for(2ms);
      b.holders.fetch_sub(1);
      lock.unlock();
      pause(rng, 10ms);
    } catch (const backend_error& e) {
      // A certification conflict the library's retries did not absorb: an error, never a grant.
      if (e.vendor_code() == 1213)
        b.retryable[slot]++;
      else
        note_failure(b, slot, e);
    } catch (const connection_error& e) {  // also outcome_unknown; expected only on a killed node
      note_failure(b, slot, e);
      db.reset();
      std::this_thread::sleep_for(200ms);
    } catch (const std::exception& e) {
      note_failure(b, slot, e);
    }
  }
  return 0;
}

std::string summary(const board& b) {
  std::string s = std::to_string(b.handoffs) + " hand-offs between nodes\n";
  for (int i = 0; i < kNodes; ++i) {
    s += "node " + std::to_string(i + 1) + ": " + std::to_string(b.grants[i]) + " grants, " +
         std::to_string(b.retryable[i]) + " client-visible 1213, " + std::to_string(b.failures[i]) + " other errors" +
         (b.failures[i] ? std::string(" (first: ") + b.first_failure[i] + ")" : "") + "\n";
  }
  return s;
}

TEST_F(GaleraTest, TableLockFromTwoNodesNeverHasTwoHolders) {
  shared_board b;
  process_group group;
  const std::string name = "contended";
  for (int node = 1; node <= 2; ++node)
    group.spawn([&, node] { return contend(*b, uri(node), node, table_, name, true); });
  group.start();
  std::this_thread::sleep_for(5s);
  b->stop = true;
  EXPECT_EQ(group.wait_all(60s), 2);
  std::cout << summary(*b);
  EXPECT_EQ(b->overlaps, 0) << "two processes held the lock at once";
  EXPECT_EQ(b->fence_regressions, 0) << "fences did not rise in grant order";
  EXPECT_GE(b->handoffs, 10) << "the lock hardly changed nodes: " << summary(*b);
  EXPECT_EQ(b->failures[0] + b->failures[1], 0) << summary(*b);
  // Every grant holds a fence above all earlier ones, whichever node drew it.
  auto db = open(3);
  EXPECT_GE(std::stoll(sql(db, "SELECT value FROM " + table_ + "_fence").rows.at(0).at(0).value()), b->last_fence);
}

TEST_F(GaleraTest, TableLockSurvivesAKilledNode) {
  shared_board b;
  process_group group;
  const std::string name = "contended-kill";
  for (int node = 1; node <= kNodes; ++node)
    group.spawn([&, node] { return contend(*b, uri(node), node, table_, name, node != 3); });
  group.start();
  std::this_thread::sleep_for(2s);
  const auto since_kill = [&] { return ms_since(*b) - b->kill_ms; };
  const auto survivor_grants = [&] { return b->grants[0] + b->grants[1]; };
  b->kill_ms = ms_since(*b);
  ha("galera-kill", 3);
  if (HasFatalFailure()) return;
  // The survivors keep quorum; their commits stall until the cluster has dropped node 3 (~6 s).
  auto survivor = open(1);
  const bool dropped = eventually([&] { return show(survivor, "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'") == "2"; },
                                  scaled(20s));
  const auto dropped_ms = since_kill();
  const int at_drop = survivor_grants();
  const bool resumed = eventually([&] { return survivor_grants() >= at_drop + 10; }, scaled(10s));
  const auto resumed_ms = since_kill();
  b->restart_ms = ms_since(*b);
  ha("galera-start", 3);
  if (HasFatalFailure()) return;
  const auto restarted_ms = since_kill();
  EXPECT_TRUE(cluster_complete(60s)) << "node 3 did not rejoin";
  // Node 3's contender takes its turns again once the node is back.
  const int node3_before = b->grants[2];
  EXPECT_TRUE(eventually([&] { return b->grants[2] > node3_before; }, 15s)) << summary(*b);
  const auto node3_ms = since_kill();
  b->stop = true;
  EXPECT_EQ(group.wait_all(60s), kNodes);
  std::cout << summary(*b) << "after the kill: cluster size 2 at " << dropped_ms << " ms, 10 more survivor grants at "
            << resumed_ms << " ms, node 3 restarted (Synced) at " << restarted_ms << " ms, node 3 granted again at "
            << node3_ms << " ms; longest pause between survivors' grants " << b->max_gap_after_kill_ms
            << " ms, ending at " << b->max_gap_end_ms - b->kill_ms << " ms; since the restart began "
            << b->max_gap_after_restart_ms << " ms\n";
  EXPECT_TRUE(dropped) << "node 1 never saw the cluster shrink to 2 nodes";
  EXPECT_TRUE(resumed) << summary(*b);
  EXPECT_EQ(b->overlaps, 0) << "two processes held the lock at once";
  EXPECT_EQ(b->fence_regressions, 0) << "fences did not rise in grant order";
  EXPECT_LE(b->max_gap_after_kill_ms, std::chrono::milliseconds(scaled(12s)).count())
      << "the survivors stalled for longer than a node loss takes";
  EXPECT_EQ(b->failures[0] + b->failures[1], 0) << "the survivors saw errors: " << summary(*b);
}

}  // namespace
}  // namespace sqllock::test
