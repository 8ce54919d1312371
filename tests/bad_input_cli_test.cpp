// Bad input to the `sqllock` command (SQLLOCK_CLI): bad lock names for every --kind and command,
// lease durations out of range, bad URIs of each scheme, release without --force (on every driver
// × dialect pair), and the whole tables of bad names, unparsable --ttl / --wait / --grace /
// --batch values and bad --table names (once, on SQLite: they are refused before any database
// is used). Each exits 2 with one clear line on stderr, runs nothing and changes no row.
// Metacharacter names are ordinary names; zero and the longest --wait behave as documented.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "sqllock/table_lock.hpp"
#include "support/bad_input.hpp"
#include "support/lock_fixture.hpp"
#include "support/program.hpp"
#include "support/session_lock_fixture.hpp"
#include "support/temp_dir.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class BadInputCliTest : public LockTableTest {
 protected:
  void SetUp() override {
    LockTableTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    dir_ = make_temp_dir("sqllock-bad-input-cli");
    db_.emplace(open());
    bystander_.emplace(*db_, "bystander");  // a live row no rejected command may touch
    bystander_->lock();
    before_ = read_lock_state(*db_);
  }
  void TearDown() override {
    bystander_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // `sqllock <command> --db URI --table T <args…>`.
  run_result cli(const std::string& command, std::vector<std::string> args,
                 const std::map<std::string, std::string>& env = {}) const {
    args.insert(args.begin(), {SQLLOCK_CLI, command, "--db", GetParam().uri, "--table", table_});
    return run_program(args, dir_, env);
  }
  // `sqllock run … --lock LOCK <options…> -- touch <dir>/ran`: the command leaves a trace if it runs.
  run_result run(const std::string& lock, std::vector<std::string> options) const {
    options.insert(options.end(), {"--lock", lock, "--", "touch", (dir_ / "ran").string()});
    return cli("run", options);
  }

  // The run failed as a usage error: exit 2, one line on stderr naming the problem, nothing ran.
  void expect_usage_error(const run_result& r, std::initializer_list<std::string_view> says,
                          const std::string& context) const {
    EXPECT_EQ(r.code, 2) << context << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("sqllock: ", 0), 0u) << context << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << context << ": one line: " << r.err;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << context << ": no raw control characters: " << r.err;
    for (auto fragment : says)
      EXPECT_NE(r.err.find(fragment), std::string::npos) << context << ": should say '" << fragment << "': " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "ran")) << context << ": the command ran";
  }

  // `sqllock status --db URI` (and `sqllock run`, with `also_run`) is a usage error about the URI
  // that never shows the password "s3cret-pw".
  void expect_bad_uri(const std::string& uri, bool also_run) const {
    SCOPED_TRACE(uri);
    for (const std::string command : {"status", "run"}) {
      if (command == "run" && !also_run) continue;
      std::vector<std::string> args{SQLLOCK_CLI, command, "--db", uri, "--table", table_};
      if (command == "run") args.insert(args.end(), {"--lock", "x", "--", "touch", (dir_ / "ran").string()});
      const auto r = run_program(args, dir_);
      expect_usage_error(r, {"invalid database URI", "accepted forms"}, command);
      EXPECT_EQ(r.err.find("s3cret-pw"), std::string::npos) << "the password is redacted: " << r.err;
    }
  }

  // For tests whose commands are all refused: no row (nor the fence source) changed.
  void expect_no_row_changed() const {
    EXPECT_EQ(read_lock_state(*db_), before_) << "a rejected command changed a row";
  }

  // The --kind values this database has.
  std::vector<std::string> kinds() const {
    switch (GetParam().dialect) {
      case dialect_kind::postgresql: return {"table", "fair", "rw", "row", "advisory"};
      case dialect_kind::mysql: return {"table", "fair", "rw", "row", "named"};
      case dialect_kind::sqlite: return {"table", "fair", "rw"};
    }
    return {};
  }

  fs::path dir_;
  std::optional<database> db_;
  std::optional<table_lock> bystander_;
  lock_state before_;
};

// Representative bad names through every kind and command that takes one (the names are checked
// after connecting, so on every target); BadInputCliParsingTest runs the whole table once.
TEST_P(BadInputCliTest, BadLockNamesExit2ForEveryKindAndCommand) {
  const std::initializer_list<std::string_view> empty = {"lock name", "empty"};
  for (const auto& kind : kinds()) expect_usage_error(run("", {"--kind", kind}), empty, "run --kind " + kind);
  expect_usage_error(cli("status", {"--lock", ""}), empty, "status");
  expect_usage_error(cli("release", {"--lock", "", "--force"}), empty, "release");
  for (const std::string kind : {"fair", "rw"})
    expect_usage_error(cli("release", {"--kind", kind, "--lock", "", "--force"}), empty, "release --kind " + kind);
  expect_usage_error(run("bad\xff", {}), {"lock name", "not valid UTF-8"}, "run, invalid UTF-8");
  expect_no_row_changed();
}

// Parsable durations outside the lease range of a table lock or a place in a queue (1 ms to 365
// days): refused by the library once connected, so on every target.
TEST_P(BadInputCliTest, TtlOutsideTheLeaseRangeExits2) {
  for (const std::string kind : {"table", "fair", "rw"})
    for (const std::string ttl : {"0", "8761h"})
      expect_usage_error(run("d", {"--kind", kind, "--ttl", ttl}), {"ttl"}, "--kind " + kind + " --ttl " + ttl);
  expect_no_row_changed();
}

TEST_P(BadInputCliTest, ZeroWaitIsOneAttemptAndTheLongestWaitReallyWaits) {
  const auto zero = run("bystander", {"--wait", "0"});
  EXPECT_EQ(zero.code, 1) << "held elsewhere: not obtained at once\n" << zero.err;
  EXPECT_NE(zero.err.find("is held elsewhere"), std::string::npos) << zero.err;
  EXPECT_FALSE(fs::exists(dir_ / "ran"));

  // 100 years, the longest --wait: waits (no overflow into "give up at once"), runs once free.
  auto free_db = open();
  table_lock holder(free_db, "long-wait");
  ASSERT_TRUE(holder.try_lock());
  program waiter({SQLLOCK_CLI, "run", "--db", GetParam().uri, "--table", table_, "--lock", "long-wait", "--wait",
                  "876600h", "--", "touch", (dir_ / "waited").string()},
                 dir_);
  std::this_thread::sleep_for(700ms);
  EXPECT_TRUE(waiter.running()) << "it waits: " << waiter.err();
  holder.unlock();
  EXPECT_EQ(waiter.wait(30s), 0) << waiter.err();
  EXPECT_TRUE(fs::exists(dir_ / "waited"));
}

// Malformed URIs of the target's own scheme, each with a password that must never be printed.
TEST_P(BadInputCliTest, BadUrisExit2WithoutShowingThePassword) {
  if (GetParam().dialect == dialect_kind::sqlite) {
    for (const std::string bad : {"sqlite:", "sqlite://", "sqlite:///tmp/a%zz.db", "sqlite:///tmp/a%00b.db"})
      expect_bad_uri(bad, bad == "sqlite:");
  } else {
    const std::string scheme = GetParam().uri.substr(0, GetParam().uri.find("://"));
    const std::string auth = scheme + "://user:s3cret-pw@";
    for (const std::string& bad : {auth + "127.0.0.1:0/db", auth + "127.0.0.1/d%zzb", auth + "127.0.0.1/db?novalue",
                                   // An unescaped '/' in the password: the URI is malformed, but its
                                   // error message must still not show the password.
                                   scheme + "://user:s3cret-pw/x@127.0.0.1:0/db"})
      expect_bad_uri(bad, bad.find(":0/") != std::string::npos);
  }
  expect_no_row_changed();
}

TEST_P(BadInputCliTest, ReleaseOfAnotherOwnersLockNeedsForceAndAMissingLockIsExit1) {
  expect_usage_error(cli("release", {"--lock", "bystander"}), {"--force"}, "release without --force");
  EXPECT_TRUE(bystander_->holds());
  const auto r = cli("release", {"--lock", "nobody-holds-this", "--force"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("no lock 'nobody-holds-this'"), std::string::npos) << r.err;
  expect_no_row_changed();
}

TEST_P(BadInputCliTest, MetacharacterNamesAreOrdinaryNames) {
  // Every seventh name: the library suite runs them all through every kind.
  const auto names = metacharacter_names();
  for (std::size_t i = 0; i < names.size(); i += 7) {
    const std::string& name = names[i];
    const auto r = run(name, {"-n"});
    EXPECT_EQ(r.code, 0) << name << "\n" << r.err;
    EXPECT_TRUE(fs::remove(dir_ / "ran")) << "the command ran under '" << name << "'";
  }
  // A name with a newline or an escape sequence is shown escaped, on one line.
  table_lock held(*db_, "evil\n\x1b[2Jname");
  ASSERT_TRUE(held.try_lock());
  const auto r = run("evil\n\x1b[2Jname", {"-n"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  held.unlock();
}

INSTANTIATE_TEST_SUITE_P(bad_input, BadInputCliTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

// Input refused while the command line is parsed, before any database is opened, or by checks
// that do not depend on the database: the whole table once, on SQLite.
class BadInputCliParsingTest : public BadInputCliTest {};

TEST_P(BadInputCliParsingTest, EveryBadLockNameExits2) {
  const auto names = bad_lock_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& bad = names[i];
    if (!bad.in_argv) continue;  // a command line cannot carry a NUL byte
    SCOPED_TRACE(bad.label);
    const std::initializer_list<std::string_view> says = {"lock name", bad.says};
    expect_usage_error(run(bad.bytes, {}), says, "run");
    // status and release check names with the same function: every fourth name.
    if (i % 4 != 0) continue;
    expect_usage_error(cli("status", {"--lock", bad.bytes}), says, "status");
    expect_usage_error(cli("release", {"--lock", bad.bytes, "--force"}), says, "release");
  }
  expect_no_row_changed();
}

TEST_P(BadInputCliParsingTest, BadDurationsExit2NamingTheOptionAndTheAcceptedForms) {
  // The parser itself is checked value by value in duration_test and against a model by
  // fuzz/fuzz_duration; here, that each kind of mistake reaches the user as exit 2.
  const std::vector<std::string> unparsable{"",
                                            "-1s",
                                            "+5s",
                                            "1y",
                                            "1e3",
                                            " 5",
                                            "nan",
                                            ".",
                                            "1.",
                                            "\xd9\xa1",  // ARABIC-INDIC DIGIT ONE
                                            "0.0000000001",
                                            "99999999999999999999",
                                            "878401h"};
  // One parser serves every option: all values through --wait, every fourth through --ttl.
  for (std::size_t i = 0; i < unparsable.size(); ++i) {
    for (const std::string option : {"--wait", "--ttl"}) {
      if (option == "--ttl" && i % 4 != 0) continue;
      expect_usage_error(run("d", {option, unparsable[i]}), {"invalid duration", "for " + option, "500ms, 30s, 5m, 1h"},
                         option + " '" + unparsable[i] + "'");
    }
  }
  for (const std::string grace : {"-1s", "8761h"})
    expect_usage_error(cli("reap", {"--grace", grace}), {"--grace"}, "--grace " + grace);
  for (const std::string batch : {"0", "100001", "1e3"})
    expect_usage_error(cli("reap", {"--batch", batch}), {"--batch", "1 to 100000"}, "--batch '" + batch + "'");
  expect_no_row_changed();
}

TEST_P(BadInputCliParsingTest, BadUrisOfAnySchemeExit2WithoutShowingThePassword) {
  for (const std::string bad :
       {"", "nosuchscheme://x/y", "postgresql", "mysql:/no-slashes/db",
        "postgresql://user:s3cret-pw@127.0.0.1:65536/db", "postgresql://user:s3cret-pw@h:port/db",
        "mysql://user:s3cret-pw@[::1]x/db", "mysql://user:s3cret-pw@[::1/db", "mariadb://user:s3cret-pw@127.0.0.1/db%4",
        "mariadb://user:s3cret-pw@h/d%00b", "postgresql://user:s3cret-pw@/db", "soci+postgresql+typo://h/db",
        "xmysql://user:s3cret-pw@h/db", "sqlite:///tmp/trunc%4"})
    expect_bad_uri(bad, false);
  const auto r = run_program({SQLLOCK_CLI, "status"}, dir_, {{"SQLLOCK_DB", "nosuchscheme://x"}});
  expect_usage_error(r, {"invalid database URI"}, "from SQLLOCK_DB");
  expect_no_row_changed();
}

TEST_P(BadInputCliParsingTest, BadTableNamesExit2BeforeAnythingIsCreated) {
  const auto tables = bad_table_names();
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const auto& bad = tables[i];
    if (bad.name.find('\0') != std::string::npos) continue;  // not on a command line
    SCOPED_TRACE(bad.label);
    const std::initializer_list<std::string_view> says = {"invalid lock table name", "use 1-48 letters"};
    const std::string uri = GetParam().uri;
    // `sqllock COMMAND --db URI --table BAD ARGS…`
    auto with_table = [&](std::vector<std::string> args) {
      args.insert(args.begin() + 1, {"--db", uri, "--table", bad.name});
      args.insert(args.begin(), SQLLOCK_CLI);
      return run_program(args, dir_);
    };
    // Every name through migrate (which would create tables); the other commands open the
    // database the same way, so they get every fourth name.
    expect_usage_error(with_table({"migrate"}), says, "migrate");
    if (i % 4 != 0) continue;
    expect_usage_error(with_table({"run", "--lock", "x", "--", "touch", (dir_ / "ran").string()}), says, "run");
    expect_usage_error(with_table({"status"}), says, "status");
    expect_usage_error(with_table({"reap"}), says, "reap");
    expect_usage_error(with_table({"release", "--lock", "bystander", "--force"}), says, "release");
  }
  expect_no_row_changed();
}

INSTANTIATE_TEST_SUITE_P(bad_input, BadInputCliParsingTest, ::testing::ValuesIn(targets_of(dialect_kind::sqlite)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
