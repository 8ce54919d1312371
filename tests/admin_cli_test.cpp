// `sqllock status`, `sqllock release --force` and `sqllock reap` as programs (SQLLOCK_CLI) on every
// driver × dialect pair: output parsed as a table and as JSON, exit codes, and the old holder's
// lost-lock signal after a forced release.
#include <unistd.h>

#include <atomic>
#include <regex>
#include <sstream>

#include "core/lock_name.hpp"
#include "sqllock/table_lock.hpp"
#include "support/json.hpp"
#include "support/lock_fixture.hpp"
#include "support/lock_rows.hpp"
#include "support/program.hpp"

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
  const std::vector<std::string> names = {"plain", "quote\"back\\slash", "ctl\x01\x1f\x7f\n\r\t end",
                                          "名前 🔒 ü", "</script><!--", "trailing space "};
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

TEST_P(AdminCliTest, ReapDeletesExpiredRowsOnly) {
  auto db = open();
  insert_rows(db, {.prefix = "dead-", .count = 500, .expires_in = -2min});
  insert_rows(db, {.prefix = "live-", .count = 3, .expires_in = 1h});
  const auto spared = cli({"reap", "--grace", "1h"});
  ASSERT_EQ(spared.code, 0) << spared.err;
  EXPECT_NE(spared.out.find("reaped 0 expired lock rows"), std::string::npos) << spared.out;
  const auto r = cli({"reap", "--batch", "100", "--grace", "1m"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("reaped 500 expired lock rows from '" + table_ + "'"), std::string::npos) << r.out;
  EXPECT_EQ(rows(db), 3);
}

TEST_P(AdminCliTest, TheDatabaseComesFromSqllockDbWhenThereIsNoDbOption) {
  auto db = open();
  table_lock a(db, "from-env", opts(30s));
  a.lock();
  const auto r = run_program({SQLLOCK_CLI, "status", "--table", table_, "--json"}, dir_, {{"SQLLOCK_DB", GetParam().uri}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(parse_json(r.out)["locks"][0]["resource"].as_string(), "from-env");
}

INSTANTIATE_TEST_SUITE_P(AllTargets, AdminCliTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

std::vector<target> mysql_targets() {
  auto all = all_targets();
  std::erase_if(all, [](const target& t) { return t.dialect != dialect_kind::mysql; });
  return all;
}
INSTANTIATE_TEST_SUITE_P(MysqlTargets, AdminCliMysqlTest, ::testing::ValuesIn(mysql_targets()),
                         [](const auto& info) { return info.param.name; });

// Usage errors and help need no database.
class AdminCliUsage : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("sqllock-admin-usage"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(AdminCliUsage, EveryCommandHasHelpAndStableUsageErrors) {
  for (const std::string cmd : {"status", "release", "reap"}) {
    const auto help = run_program({SQLLOCK_CLI, cmd, "--help"}, dir_);
    EXPECT_EQ(help.code, 0) << cmd;
    EXPECT_NE(help.out.find("usage: sqllock " + cmd), std::string::npos) << help.out;
    // No --db and no SQLLOCK_DB.
    const auto no_db = run_program({SQLLOCK_CLI, cmd, "--lock", "x", "--force"}, dir_, {{"SQLLOCK_DB", ""}});
    EXPECT_EQ(no_db.code, 2) << cmd << ": " << no_db.err;
    EXPECT_NE(no_db.err.find("SQLLOCK_DB"), std::string::npos) << no_db.err;
  }
  const auto top = run_program({SQLLOCK_CLI, "--help"}, dir_);
  for (const std::string cmd : {"status", "release", "reap"})
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

}  // namespace
}  // namespace sqllock::test
