// `sqllock status`, `sqllock release --force`, `sqllock reap` and `sqllock migrate` as programs
// (SQLLOCK_CLI) on every driver × dialect pair (migrate: SQLite and one server): output parsed as a
// table and as JSON, exit codes, and the old holder's lost-lock signal after a forced release.
#include <unistd.h>

#include <atomic>
#include <regex>
#include <sstream>
#include <thread>

#include "common/lock_name.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/migrate.hpp"
#include "sqllock/rw_lock.hpp"
#include "sqllock/status.hpp"
#include "sqllock/table_lock.hpp"
#include "support/dead_port.hpp"
#include "support/json.hpp"
#include "support/lock_fixture.hpp"
#include "support/lock_rows.hpp"
#include "support/program.hpp"
#include "support/temp_dir.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string host_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

// A status table: the header's column names and each row's cells (cells are separated by two or
// more spaces; the names used with the table parser contain no double spaces).
struct parsed_table {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
};

parsed_table parse_table(const std::string& text) {
  parsed_table t;
  std::istringstream in(text);
  std::string line;
  const std::regex gap(" {2,}");
  while (std::getline(in, line)) {
    if (line.empty()) break;  // the advisory-lock section follows a blank line
    std::vector<std::string> cells(std::sregex_token_iterator(line.begin(), line.end(), gap, -1),
                                   std::sregex_token_iterator());
    if (t.header.empty()) {
      t.header = cells;
      continue;
    }
    EXPECT_EQ(cells.size(), t.header.size()) << "misaligned row: " << line;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < cells.size() && i < t.header.size(); ++i) row[t.header[i]] = cells[i];
    t.rows.push_back(std::move(row));
  }
  return t;
}

table_lock_options opts(std::chrono::milliseconds ttl, std::function<void()> on_lost = {}) {
  table_lock_options o;
  o.ttl = ttl;
  o.on_lost = std::move(on_lost);
  return o;
}

class AdminCliTest : public LockTableTest {
 protected:
  void SetUp() override {
    LockTableTest::SetUp();
    dir_ = make_temp_dir("sqllock-admin-cli");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `sqllock <args…> --db URI --table T`.
  run_result cli(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
    args.insert(args.begin(), SQLLOCK_CLI);
    args.insert(args.end(), {"--db", GetParam().uri, "--table", table_});
    return run_program(args, dir_, env);
  }

  fs::path dir_;
};

TEST_P(AdminCliTest, StatusTableListsEveryHolderAndMarksExpiredRows) {
  auto db1 = open();
  auto db2 = open();
  table_lock a(db1, "alpha", opts(30s));
  table_lock b(db2, "beta job", opts(20s));
  a.lock();
  a.lock();
  b.lock();
  insert_rows(db1, {.prefix = "gamma-", .count = 1, .expires_in = -5s});

  const auto r = cli({"status"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto t = parse_table(r.out);
  EXPECT_EQ(t.header, (std::vector<std::string>{"RESOURCE", "HOST", "PID", "THREAD", "COUNT", "FENCE", "ACQUIRED_UTC",
                                                "EXPIRES_IN_S", "STATE"}));
  ASSERT_EQ(t.rows.size(), 3u) << r.out;
  const auto& ra = t.rows[0];
  EXPECT_EQ(ra.at("RESOURCE"), "alpha");
  EXPECT_EQ(ra.at("HOST"), host_name());
  EXPECT_EQ(ra.at("PID"), std::to_string(::getpid()));
  EXPECT_EQ(ra.at("COUNT"), "2");
  EXPECT_EQ(ra.at("FENCE"), std::to_string(a.fence()));
  EXPECT_EQ(ra.at("STATE"), "held");
  EXPECT_TRUE(std::regex_match(ra.at("ACQUIRED_UTC"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
  const double left = std::stod(ra.at("EXPIRES_IN_S"));
  EXPECT_GT(left, 20.0);
  EXPECT_LE(left, 30.0);
  EXPECT_TRUE(std::regex_match(ra.at("EXPIRES_IN_S"), std::regex(R"(\d+\.\d{3})")));

  EXPECT_EQ(t.rows[1].at("RESOURCE"), "beta job");
  EXPECT_EQ(t.rows[1].at("FENCE"), std::to_string(b.fence()));
  EXPECT_EQ(t.rows[1].at("STATE"), "held");

  EXPECT_EQ(t.rows[2].at("RESOURCE"), "gamma-1");
  EXPECT_EQ(t.rows[2].at("STATE"), "expired");
  EXPECT_LT(std::stod(t.rows[2].at("EXPIRES_IN_S")), -4.0);

  const bool pg = GetParam().dialect == dialect_kind::postgresql;
  EXPECT_EQ(r.out.find("advisory locks (pg_locks") != std::string::npos, pg) << r.out;
}

TEST_P(AdminCliTest, StatusJsonKeepsEveryNameExact) {
  auto db = open();
  const std::vector<std::string> names = {"plain",    "quote\"back\\slash", "ctl\x01\x1f\x7f\n\r\t end",
                                          "名前 🔒 ü", "</script><!--",      "trailing space "};
  std::vector<std::unique_ptr<table_lock>> held;
  for (const auto& n : names) {
    held.push_back(std::make_unique<table_lock>(db, n, opts(30s)));
    held.back()->lock();
  }
  insert_rows(db, {.prefix = "old-", .count = 1, .expires_in = -2s});

  const auto r = cli({"status", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one line of JSON";
  json doc;
  ASSERT_NO_THROW(doc = parse_json(r.out)) << r.out;
  EXPECT_EQ(doc["table"].as_string(), table_);
  EXPECT_EQ(doc["dialect"].as_string(), std::string(to_string(GetParam().dialect)));
  EXPECT_EQ(doc.has("advisory_locks"), GetParam().dialect == dialect_kind::postgresql);
  const auto& locks = doc["locks"];
  ASSERT_EQ(locks.items.size(), names.size() + 1);
  std::map<std::string, const json*> by_name;
  for (const auto& l : locks.items) by_name[l["resource"].as_string()] = &l;
  for (std::size_t i = 0; i < names.size(); ++i) {
    ASSERT_TRUE(by_name.count(names[i])) << "missing " << names[i] << " in " << r.out;
    const json& l = *by_name[names[i]];
    EXPECT_EQ(l["fence"].as_int(), held[i]->fence());
    EXPECT_EQ(l["pid"].as_int(), ::getpid());
    EXPECT_EQ(l["host"].as_string(), host_name());
    EXPECT_EQ(l["count"].as_int(), 1);
    EXPECT_FALSE(l["expired"].as_bool());
    EXPECT_GT(l["expires_in_ms"].as_int(), 20000);
    EXPECT_NEAR(l["expires_in_s"].as_double(), static_cast<double>(l["expires_in_ms"].as_int()) / 1000, 0.0011);
    EXPECT_FALSE(l["owner"].as_string().empty());
  }
  EXPECT_TRUE((*by_name["old-1"])["expired"].as_bool());
  EXPECT_LT((*by_name["old-1"])["expires_in_ms"].as_int(), -1000);

  // The table shows the same names escaped, one line each.
  const auto table = cli({"status"});
  ASSERT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("ctl\\x01\\x1f\\x7f\\n\\r\\t end"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("quote\"back\\\\slash"), std::string::npos) << table.out;
}

// MySQL's VARBINARY column stores any bytes, so a row written by hand may hold invalid UTF-8.
class AdminCliMysqlTest : public AdminCliTest {};

TEST_P(AdminCliMysqlTest, InvalidUtf8StoredByHandStillGivesValidJson) {
  auto db = open();
  insert_rows(db, {.prefix = "bad\xff\xfe-", .count = 1, .expires_in = 10s});
  const auto r = cli({"status", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json doc;
  ASSERT_NO_THROW(doc = parse_json(r.out)) << r.out;
  const std::string shown = doc["locks"][0]["resource"].as_string();
  EXPECT_TRUE(detail::is_valid_utf8(shown));
  EXPECT_EQ(shown, "bad\xef\xbf\xbd\xef\xbf\xbd-1");  // two U+FFFD
  const auto table = cli({"status"});
  EXPECT_NE(table.out.find("bad\\xff\\xfe-1"), std::string::npos) << table.out;
}

TEST_P(AdminCliTest, StatusOfOneLockAndExitOneWhenItHasNoRow) {
  auto db = open();
  table_lock a(db, "only-me", opts(30s));
  a.lock();
  table_lock b(db, "not-me", opts(30s));
  b.lock();
  const auto r = cli({"status", "--lock", "only-me"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto t = parse_table(r.out);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].at("RESOURCE"), "only-me");
  EXPECT_EQ(r.out.find("advisory"), std::string::npos);

  const auto j = cli({"status", "--lock", "only-me", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(parse_json(j.out)["locks"].items.size(), 1u);

  const auto none = cli({"status", "--lock", "nobody"});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("no lock 'nobody'"), std::string::npos) << none.err;
  EXPECT_EQ(cli({"status", "--lock", ""}).code, 2) << "an invalid name is a usage error";
}

TEST_P(AdminCliTest, ForceReleaseDeletesTheRowAndTheOldHolderLearnsItLostTheLock) {
  auto holder_db = open();
  std::atomic<bool> lost{false};
  table_lock held(holder_db, "stuck-job", opts(600ms, [&] { lost = true; }));
  held.lock();
  const auto fence = held.fence();

  const auto refused = cli({"release", "--lock", "stuck-job"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(rows(holder_db), 1) << "nothing happens without --force";

  const auto r = cli({"release", "--lock", "stuck-job", "--force"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("released 'stuck-job' by force; it was held by host " + host_name() + " pid " +
                       std::to_string(::getpid())),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fence " + std::to_string(fence)), std::string::npos) << r.out;
  EXPECT_EQ(rows(holder_db), 0);

  EXPECT_TRUE(eventually([&] { return lost.load(); }, 3s)) << "on_lost did not fire";
  EXPECT_FALSE(held.holds());

  const auto again = cli({"release", "--lock", "stuck-job", "--force"});
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("no lock 'stuck-job'"), std::string::npos) << again.err;
}

// The queue of a read-write lock with two readers holding, a writer waiting for them and a reader
// waiting for the writer, and a fair lock's holder: as a table, in ticket order per name and
// kind, and as JSON.
TEST_P(AdminCliTest, StatusShowsEachQueueInTicketOrderWithHoldersAndWaiters) {
  auto db = open();
  rw_lock reader1(open(), "catalog");
  rw_lock reader2(open(), "catalog");
  ASSERT_TRUE(reader1.try_lock_shared());
  ASSERT_TRUE(reader2.try_lock_shared());
  fair_lock fair(open(), "catalog", {.ttl = 20s});
  ASSERT_TRUE(fair.try_lock());
  std::vector<std::jthread> waiting;
  for (const bool write : {true, false}) {
    waiting.emplace_back([db = open(), write] {
      rw_lock w(db, "catalog");
      if (write ? w.try_lock_for(60s) : w.try_lock_shared_for(60s)) write ? w.unlock() : w.unlock_shared();
    });
    const std::size_t places = write ? 4 : 5;
    ASSERT_TRUE(eventually([&] { return find_queue_entries(db, "catalog").size() == places; }, 10s));
  }

  const auto r = cli({"status"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("no locks in table"), std::string::npos) << r.out;
  const auto heading = r.out.find("\nqueues of fair and read-write locks:\n");
  ASSERT_NE(heading, std::string::npos) << r.out;
  const auto t = parse_table(r.out.substr(r.out.find(":\n", heading) + 2));
  EXPECT_EQ(t.header, (std::vector<std::string>{"RESOURCE", "KIND", "POS", "TICKET", "MODE", "W/R", "HOST", "PID",
                                                "THREAD", "ENQUEUED_UTC", "EXPIRES_IN_S", "STATE", "AHEAD"}));
  ASSERT_EQ(t.rows.size(), 5u) << r.out;
  // KIND, POS, MODE, W/R, STATE, AHEAD
  const std::vector<std::vector<std::string>> expected{{"fair", "1", "write", "1/0", "held", "0"},
                                                       {"rw", "1", "read", "0/1", "held", "0"},
                                                       {"rw", "2", "read", "0/1", "held", "0"},
                                                       {"rw", "3", "write", "1/0", "waiting", "2"},
                                                       {"rw", "4", "read", "0/1", "waiting", "1"}};
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& row = t.rows[i];
    EXPECT_EQ(row.at("RESOURCE"), "catalog");
    EXPECT_EQ((std::vector<std::string>{row.at("KIND"), row.at("POS"), row.at("MODE"), row.at("W/R"), row.at("STATE"),
                                        row.at("AHEAD")}),
              expected[i])
        << r.out;
    EXPECT_EQ(row.at("PID"), std::to_string(::getpid()));
    EXPECT_EQ(row.at("HOST"), host_name());
    EXPECT_TRUE(std::regex_match(row.at("ENQUEUED_UTC"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
    EXPECT_GT(std::stod(row.at("EXPIRES_IN_S")), 0.0);
    if (i > 1) {
      EXPECT_GT(std::stoll(row.at("TICKET")), std::stoll(t.rows[i - 1].at("TICKET"))) << "ticket order";
    }
  }
  EXPECT_EQ(t.rows[0].at("TICKET"), std::to_string(fair.fence()));
  EXPECT_EQ(t.rows[1].at("TICKET"), std::to_string(reader1.fence()));
  EXPECT_EQ(t.rows[2].at("TICKET"), std::to_string(reader2.fence()));

  const auto j = cli({"status", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const json doc = parse_json(j.out);
  EXPECT_TRUE(doc["locks"].items.empty());
  const auto& queue = doc["queue"];
  ASSERT_EQ(queue.items.size(), 5u) << j.out;
  for (std::size_t i = 0; i < queue.items.size(); ++i) {
    const json& e = queue[i];
    const auto& row = t.rows[i];
    EXPECT_EQ(e["resource"].as_string(), "catalog");
    EXPECT_EQ(e["kind"].as_string(), row.at("KIND"));
    EXPECT_EQ(std::to_string(e["ticket"].as_int()), row.at("TICKET"));
    EXPECT_EQ(std::to_string(e["position"].as_int()), row.at("POS"));
    EXPECT_EQ(e["mode"].as_string(), row.at("MODE"));
    EXPECT_EQ(std::to_string(e["write_levels"].as_int()) + "/" + std::to_string(e["read_levels"].as_int()),
              row.at("W/R"));
    EXPECT_EQ(e["state"].as_string(), row.at("STATE"));
    EXPECT_EQ(e["holds"].as_bool(), row.at("STATE") == "held");
    EXPECT_EQ(std::to_string(e["blockers"].as_int()), row.at("AHEAD"));
    EXPECT_EQ(e["pid"].as_int(), ::getpid());
    EXPECT_FALSE(e["owner"].as_string().empty());
    EXPECT_FALSE(e["expired"].as_bool());
    EXPECT_GT(e["expires_in_ms"].as_int(), 0);
  }

  // --lock: the queues of that name only; exit 0 although it has no lock row.
  const auto one = cli({"status", "--lock", "catalog", "--json"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(parse_json(one.out)["queue"].items.size(), 5u);
  EXPECT_EQ(cli({"status", "--lock", "other"}).code, 1);

  reader1.unlock_shared();
  reader2.unlock_shared();
  fair.unlock();
}

TEST_P(AdminCliTest, ForceReleaseOfAQueueDeletesItsPlacesAndTheHolderLearnsItLostTheLock) {
  auto holder_db = open();
  std::atomic<bool> lost{false};
  fair_lock held(holder_db, "stuck-queue", {.ttl = 600ms, .on_lost = [&] { lost = true; }});
  held.lock();
  const auto ticket = held.fence();

  const auto refused = cli({"release", "--kind", "fair", "--lock", "stuck-queue"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(cli({"release", "--kind", "bogus", "--lock", "stuck-queue", "--force"}).code, 2);
  EXPECT_EQ(find_queue_entries(holder_db, "stuck-queue").size(), 1u) << "nothing happens without --force";

  const auto other = cli({"release", "--kind", "rw", "--lock", "stuck-queue", "--force"});
  EXPECT_EQ(other.code, 1) << other.err;
  EXPECT_NE(other.err.find("no place in the queue of read-write lock 'stuck-queue'"), std::string::npos) << other.err;
  EXPECT_TRUE(held.holds()) << "the fair lock's queue is another queue";

  const auto r = cli({"release", "--kind", "fair", "--lock", "stuck-queue", "--force"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("released the holding place 1 (ticket " + std::to_string(ticket) +
                       ", write) of fair lock 'stuck-queue' by force; it was taken by host " + host_name() + " pid " +
                       std::to_string(::getpid())),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(find_queue_entries(holder_db, "stuck-queue").empty());
  EXPECT_TRUE(eventually([&] { return lost.load(); }, 3s)) << "on_lost did not fire";
  EXPECT_FALSE(held.holds());

  fair_lock next(open(), "stuck-queue");
  ASSERT_TRUE(next.try_lock()) << "the queue is free";
  EXPECT_GT(next.fence(), ticket);
  next.unlock();
  const auto again = cli({"release", "--kind", "fair", "--lock", "stuck-queue", "--force"});
  EXPECT_EQ(again.code, 1) << again.err;
}

TEST_P(AdminCliTest, ReapDeletesExpiredRowsOnly) {
  auto db = open();
  insert_rows(db, {.prefix = "dead-", .count = 500, .expires_in = -2min});
  insert_rows(db, {.prefix = "live-", .count = 3, .expires_in = 1h});
  insert_queue_entries(db, {.prefix = "dead-q-", .count = 40, .names = 4, .expires_in = -2min});
  insert_queue_entries(db, {.prefix = "dead-q-", .count = 2, .names = 2, .expires_in = 1h, .session = "live"});
  const auto spared = cli({"reap", "--grace", "1h"});
  ASSERT_EQ(spared.code, 0) << spared.err;
  EXPECT_NE(spared.out.find("reaped 0 expired rows (locks, permits, queue entries, latches)"), std::string::npos)
      << spared.out;
  const auto r = cli({"reap", "--batch", "100", "--grace", "1m"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("reaped 540 expired rows (locks, permits, queue entries, latches) from '" + table_ + "'"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(rows(db), 3);
  EXPECT_EQ(list_queue_entries(db).size(), 2u) << "the live places stay";
}

TEST_P(AdminCliTest, TheDatabaseComesFromSqllockDbWhenThereIsNoDbOption) {
  auto db = open();
  table_lock a(db, "from-env", opts(30s));
  a.lock();
  const std::map<std::string, std::string> env{{"SQLLOCK_DB", GetParam().uri}};
  const auto r = run_program({SQLLOCK_CLI, "status", "--table", table_, "--json"}, dir_, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(parse_json(r.out)["locks"][0]["resource"].as_string(), "from-env");

  insert_rows(db, {.prefix = "dead-", .count = 2, .expires_in = -1h});
  const auto reaped = run_program({SQLLOCK_CLI, "reap", "--table", table_}, dir_, env);
  ASSERT_EQ(reaped.code, 0) << reaped.err;
  EXPECT_NE(reaped.out.find("reaped 2 expired rows (locks, permits, queue entries, latches) from '" + table_ + "'"),
            std::string::npos)
      << reaped.out;

  const auto released = run_program({SQLLOCK_CLI, "release", "--table", table_, "--lock", "from-env", "--force"}, dir_,
                                    env);
  ASSERT_EQ(released.code, 0) << released.err;
  EXPECT_NE(released.out.find("released 'from-env' by force"), std::string::npos) << released.out;
  EXPECT_EQ(rows(db), 0) << "both commands worked on $SQLLOCK_DB";
}

// On PostgreSQL, status also lists the advisory locks in pg_locks, whoever holds them.
class AdminCliPostgresTest : public AdminCliTest {};

TEST_P(AdminCliPostgresTest, StatusListsAdvisoryLocksOfAnySession) {
  auto db = open();
  // A 64-bit key beyond 32 bits (PostgreSQL splits it in pg_locks) and a shared two-key lock,
  // both unique to this process: other tests hold advisory locks on the same server.
  const std::int64_t key = -(std::int64_t{1} << 40) - ::getpid();
  const std::int64_t k1 = ::getpid(), k2 = 7;
  // Session locks, held by the pooled connection this statement ran on for as long as `db` lives.
  const auto held = sql(db,
                        "SELECT pg_backend_pid(), CAST(pg_try_advisory_lock(CAST($1 AS bigint)) AS integer),"
                        " CAST(pg_try_advisory_lock_shared(CAST($2 AS integer), CAST($3 AS integer)) AS integer)",
                        {key, k1, k2});
  const std::string pid = held.rows.at(0).at(0).value();
  ASSERT_EQ(held.rows[0].at(1).value(), "1");
  ASSERT_EQ(held.rows[0].at(2).value(), "1");
  const std::string pair = std::to_string(k1) + "," + std::to_string(k2);

  const auto r = cli({"status"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto heading = r.out.find("\nadvisory locks (pg_locks, current database):\n");
  ASSERT_NE(heading, std::string::npos) << r.out;
  const auto section = parse_table(r.out.substr(r.out.find(":\n", heading) + 2));
  EXPECT_EQ(section.header, (std::vector<std::string>{"PID", "KEY", "MODE", "GRANTED"}));
  std::map<std::string, std::map<std::string, std::string>> mine;  // KEY → row, for our backend
  for (const auto& row : section.rows)
    if (row.at("PID") == pid) mine[row.at("KEY")] = row;
  ASSERT_EQ(mine.size(), 2u) << r.out;
  EXPECT_EQ(mine[std::to_string(key)]["MODE"], "ExclusiveLock") << r.out;
  EXPECT_EQ(mine[std::to_string(key)]["GRANTED"], "yes") << r.out;
  EXPECT_EQ(mine[pair]["MODE"], "ShareLock") << r.out;

  const auto j = cli({"status", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  std::map<std::vector<std::int64_t>, const json*> by_keys;  // for our backend
  const json doc = parse_json(j.out);
  for (const auto& a : doc["advisory_locks"].items) {
    if (std::to_string(a["pid"].as_int()) != pid) continue;
    std::vector<std::int64_t> keys;
    for (const auto& k : a["keys"].items) keys.push_back(k.as_int());
    by_keys[keys] = &a;
  }
  ASSERT_EQ(by_keys.size(), 2u) << j.out;
  ASSERT_TRUE(by_keys.count({key})) << j.out;
  EXPECT_EQ((*by_keys[{key}])["mode"].as_string(), "ExclusiveLock");
  EXPECT_TRUE((*by_keys[{key}])["granted"].as_bool());
  ASSERT_TRUE(by_keys.count({k1, k2})) << j.out;
  EXPECT_EQ((*by_keys[{k1, k2}])["mode"].as_string(), "ShareLock");
}

INSTANTIATE_TEST_SUITE_P(AllTargets, AdminCliTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

std::vector<target> targets_of(dialect_kind dialect) {
  auto all = all_targets();
  std::erase_if(all, [&](const target& t) { return t.dialect != dialect; });
  return all;
}
INSTANTIATE_TEST_SUITE_P(MysqlTargets, AdminCliMysqlTest, ::testing::ValuesIn(targets_of(dialect_kind::mysql)),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(PostgresTargets, AdminCliPostgresTest,
                         ::testing::ValuesIn(targets_of(dialect_kind::postgresql)),
                         [](const auto& info) { return info.param.name; });

// `sqllock migrate`, as the schema owner, on a table of its own. SQLite and one server suffice:
// the command only reports what migrate() (tested on every pair in migrate_test) did.
class MigrateCliTest : public ::testing::TestWithParam<target> {
 protected:
  void SetUp() override {
    SQLLOCK_REQUIRE_SERVER(GetParam().owner_uri);
    dir_ = make_temp_dir("sqllock-migrate-cli");
    table_ = unique_name("mig");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // `sqllock migrate --table T [--db URI]`; without `with_db_option` the URI is in $SQLLOCK_DB.
  run_result migrate_cli(bool with_db_option) const {
    std::vector<std::string> argv{SQLLOCK_CLI, "migrate", "--table", table_};
    if (with_db_option) argv.insert(argv.end(), {"--db", GetParam().owner_uri});
    return run_program(argv, dir_, {{"SQLLOCK_DB", with_db_option ? "" : GetParam().owner_uri}});
  }
  database open_owner() const {
    database_options o;
    o.table = table_;
    return database(GetParam().owner_uri, o);
  }

  fs::path dir_;
  std::string table_;
};

TEST_P(MigrateCliTest, AppliesEveryMigrationOnceThenHasNothingToDo) {
  const auto known = known_migrations(GetParam().dialect);
  ASSERT_FALSE(known.empty());
  std::string versions;
  for (const auto& m : known) versions += " " + std::to_string(m.version);
  const std::string newest = std::to_string(known.back().version);

  const auto first = migrate_cli(/*with_db_option=*/false);
  ASSERT_EQ(first.code, 0) << "the database comes from $SQLLOCK_DB: " << first.err;
  EXPECT_NE(first.out.find("lock table '" + table_ + "' on "), std::string::npos) << first.out;
  EXPECT_NE(first.out.find(": applied" + versions + "; now at schema version " + newest + "\n"), std::string::npos)
      << first.out;
  auto db = open_owner();
  EXPECT_EQ(schema_version(db), known.back().version);

  const auto second = migrate_cli(/*with_db_option=*/true);
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.out.find("is at schema version " + newest + "; nothing to do\n"), std::string::npos) << second.out;
}

TEST_P(MigrateCliTest, ATamperedAppliedMigrationExitsWithTheSchemaCode) {
  ASSERT_EQ(migrate_cli(/*with_db_option=*/true).code, 0);
  auto db = open_owner();
  EXPECT_EQ(sql(db, "UPDATE sqllock_schema_migrations SET checksum = $1 WHERE lock_table = $2 AND version = 1",
                {std::string("tampered"), table_})
                .affected,
            1u);
  const auto r = migrate_cli(/*with_db_option=*/true);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("sqllock: migration 1 "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("was applied with checksum tampered"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("edited"), std::string::npos) << "the message says what happened: " << r.err;
  EXPECT_EQ(r.out, "");
}

std::vector<target> migrate_cli_targets() {
  auto all = as_owner(all_targets());
  std::erase_if(all, [](const target& t) { return t.name != "soci_sqlite" && t.name != "pqxx_postgresql"; });
  return all;
}
INSTANTIATE_TEST_SUITE_P(SqliteAndPostgres, MigrateCliTest, ::testing::ValuesIn(migrate_cli_targets()),
                         [](const auto& info) { return info.param.name; });

// Usage errors and help need no database.
class AdminCliUsage : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("sqllock-admin-usage"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(AdminCliUsage, EveryCommandHasHelpAndStableUsageErrors) {
  for (const std::string cmd : {"status", "release", "reap", "migrate"}) {
    const auto help = run_program({SQLLOCK_CLI, cmd, "--help"}, dir_);
    EXPECT_EQ(help.code, 0) << cmd;
    EXPECT_NE(help.out.find("usage: sqllock " + cmd), std::string::npos) << help.out;
    // No --db and no SQLLOCK_DB.
    const auto no_db = run_program({SQLLOCK_CLI, cmd, "--lock", "x", "--force"}, dir_, {{"SQLLOCK_DB", ""}});
    EXPECT_EQ(no_db.code, 2) << cmd << ": " << no_db.err;
    EXPECT_NE(no_db.err.find("SQLLOCK_DB"), std::string::npos) << no_db.err;
  }
  const auto top = run_program({SQLLOCK_CLI, "--help"}, dir_);
  for (const std::string cmd : {"status", "release", "reap", "migrate"})
    EXPECT_NE(top.out.find("  " + cmd + " "), std::string::npos) << top.out;
  const std::string db = "sqlite://" + (dir_ / "x.db").string();
  EXPECT_EQ(run_program({SQLLOCK_CLI, "reap", "--db", db, "--batch", "0"}, dir_).code, 2);
  EXPECT_EQ(run_program({SQLLOCK_CLI, "reap", "--db", db, "--batch", "12x"}, dir_).code, 2);
  EXPECT_EQ(run_program({SQLLOCK_CLI, "reap", "--db", db, "--grace", "-1s"}, dir_).code, 2);
  EXPECT_EQ(run_program({SQLLOCK_CLI, "release", "--db", db, "--force"}, dir_).code, 2) << "--lock is required";
  EXPECT_EQ(run_program({SQLLOCK_CLI, "status", "--db", db, "--bogus"}, dir_).code, 2);
  // A database without the lock table: exit 4.
  EXPECT_EQ(run_program({SQLLOCK_CLI, "status", "--db", db}, dir_).code, 4);
  EXPECT_EQ(run_program({SQLLOCK_CLI, "reap", "--db", db}, dir_).code, 4);
  EXPECT_EQ(run_program({SQLLOCK_CLI, "release", "--db", db, "--lock", "x", "--force"}, dir_).code, 4);
}

// A database nobody answers for: every command exits 3 and says so, whichever server kind.
TEST_F(AdminCliUsage, AnUnreachableDatabaseExits3) {
  const dead_port refusing;
  for (const std::string scheme : {"postgresql", "mysql"}) {
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"status"}, {"release", "--lock", "x", "--force"}, {"reap"}, {"migrate"}}) {
      std::vector<std::string> argv{SQLLOCK_CLI};
      argv.insert(argv.end(), command.begin(), command.end());
      argv.insert(argv.end(), {"--db", refusing.uri(scheme)});
      const auto r = run_program(argv, dir_);
      EXPECT_EQ(r.code, 3) << scheme << " " << command[0] << ": " << r.err;
      EXPECT_NE(r.err.find("sqllock: database unreachable"), std::string::npos) << r.err;
    }
  }
}

}  // namespace
}  // namespace sqllock::test
