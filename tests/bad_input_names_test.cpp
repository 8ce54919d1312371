// Bad and unusual lock names through every lock kind of the public API and the operator
// functions, on every driver × dialect pair: bad names are refused with invalid_argument and a
// message saying what is wrong, and change no row; names at the limit, look-alikes (case,
// NFC/NFD, padding, LIKE wildcards) and SQL metacharacters are ordinary, distinct locks.
#include <gtest/gtest.h>

#include "sqllock/advisory_lock.hpp"
#include "sqllock/error.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/status.hpp"
#include "sqllock/table_lock.hpp"
#include "support/bad_input.hpp"
#include "support/expect_error.hpp"
#include "support/lock_fixture.hpp"
#include "support/lock_kinds.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;

// Shows a name in failure messages with its bytes visible.
std::string shown(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out.size() > 40 ? out.substr(0, 40) + "…(" + std::to_string(name.size()) + " bytes)" : out;
}

class BadInputNamesTest : public LockTableTest {
 protected:
  std::vector<lock_kind> kinds() const { return lock_kinds_of(GetParam().dialect); }

  // Advisory and named locks are server-wide, and this test runs on another driver of the same
  // server at the same time, with the same names: for those kinds `name` is made unique to this
  // run. A short name gets a prefix. A name at the length limit keeps its length and stays valid
  // UTF-8: its first whole characters give way to the prefix (padded to a multiple of 3 bytes, as
  // the at-limit names are built of 1-, 3- and 4-byte characters that start on such a boundary).
  std::string own_name(const lock_kind& kind, const std::string& name, bool keep_length = false) const {
    if (kind.name == "table_lock" || kind.name == "row_lock") return name;
    if (!keep_length) return run_prefix_ + name;
    std::string prefix = run_prefix_;
    prefix.resize((prefix.size() + 2) / 3 * 3, '-');
    return prefix + name.substr(prefix.size());
  }

  // The row-lock table holds `name` (row locks insert their row on first use; on PostgreSQL in the
  // lock's transaction, so it shows once that has ended).
  const std::string run_prefix_ = unique_name("bn") + "-";

  bool has_row_lock_row(const database& db, const std::string& name) const {
    const char q = GetParam().dialect == dialect_kind::mysql ? '`' : '"';
    return sql(db, "SELECT resource FROM " + std::string(1, q) + table_ + "_rows" + q + " WHERE resource = $1", {name})
               .rows.size() == 1;
  }
};

TEST_P(BadInputNamesTest, BadNamesAreRefusedByEveryKindAndChangeNoRow) {
  auto db = open();
  table_lock bystander(db, "bystander");  // a live row that must stay exactly as it is
  bystander.lock();
  const auto before = read_lock_state(db);

  for (const auto& bad : bad_lock_names()) {
    SCOPED_TRACE(bad.label);
    const std::initializer_list<std::string_view> says = {"lock name", bad.says};
    for (const auto& kind : kinds()) {
      expect_error<invalid_argument>([&] { kind.take(db, bad.bytes, std::monostate{}); }, says, kind.name);
      expect_error<invalid_argument>([&] { kind.take(db, bad.bytes, std::chrono::milliseconds(1000)); }, says,
                                     kind.name + " (timed)");
    }
    if (supports_row_locks(db))
      expect_error<invalid_argument>([&] { with_row_lock(db, bad.bytes, [](row_lock_tx&) {}); }, says, "with_row_lock");
    if (db.dialect() == dialect_kind::postgresql)
      expect_error<invalid_argument>([&] { with_advisory_xact_lock(db, bad.bytes, [] {}); }, says,
                                     "with_advisory_xact_lock");
    expect_error<invalid_argument>([&] { find_lock(db, bad.bytes); }, says, "find_lock");
    expect_error<invalid_argument>([&] { force_release(db, bad.bytes); }, says, "force_release");
    expect_error<invalid_argument>([&] { advisory_key::from_name(bad.bytes); }, says, "advisory_key::from_name");
    expect_error<invalid_argument>([&] { named_lock_server_name(bad.bytes); }, says, "named_lock_server_name");
  }
  EXPECT_EQ(read_lock_state(db), before);
  EXPECT_TRUE(bystander.holds());
}

TEST_P(BadInputNamesTest, NamesOfExactly255BytesAreLocksStoredUnchanged) {
  auto db1 = open();
  auto db2 = open();
  for (const auto& kind : kinds()) {
    for (const auto& limit_name : at_limit_names()) {
      const std::string name = own_name(kind, limit_name, /*keep_length=*/true);
      SCOPED_TRACE(kind.name + " " + shown(name));
      ASSERT_EQ(name.size(), 255u);
      auto held = kind.take(db1, name, std::monostate{});
      ASSERT_TRUE(held) << "a free 255-byte name is acquired";
      EXPECT_FALSE(kind.take(db2, name, std::monostate{})) << "and held: another owner is refused";
      if (kind.name == "table_lock") {
        const auto row = find_lock(db1, name);
        ASSERT_TRUE(row);
        EXPECT_EQ(row->resource, name) << "stored byte for byte";
      }
      held.reset();
      if (kind.name == "row_lock") {
        EXPECT_TRUE(has_row_lock_row(db1, name)) << "stored byte for byte";
      }
    }
  }
  EXPECT_EQ(rows(db1), 0) << "every table lock was released";
}

TEST_P(BadInputNamesTest, LookAlikeNamesAreDistinctLocksHeldAtOnce) {
  auto db1 = open();
  auto db2 = open();
  for (const auto& kind : kinds()) {
    for (const auto& [raw_a, raw_b] : distinct_name_pairs()) {
      const std::string a = own_name(kind, raw_a), b = own_name(kind, raw_b);
      SCOPED_TRACE(kind.name + " '" + shown(a) + "' vs '" + shown(b) + "'");
      auto held_a = kind.take(db1, a, std::monostate{});
      ASSERT_TRUE(held_a);
      // The control: the same name does exclude the other owner, so success below means distinct.
      EXPECT_FALSE(kind.take(db2, a, std::monostate{})) << "the same name is the same lock";
      auto held_b = kind.take(db2, b, std::monostate{});
      EXPECT_TRUE(held_b) << "a look-alike is another lock, held at the same time";
      if (kind.name == "table_lock") {
        std::vector<std::string> resources;
        for (const auto& l : list_locks(db1)) resources.push_back(l.resource);
        std::sort(resources.begin(), resources.end());
        std::vector<std::string> expected{a, b};
        std::sort(expected.begin(), expected.end());
        EXPECT_EQ(resources, expected) << "two rows, each name byte for byte";
      }
      held_a.reset();
      held_b.reset();
      if (kind.name == "row_lock") {
        EXPECT_TRUE(has_row_lock_row(db1, a));
        EXPECT_TRUE(has_row_lock_row(db1, b));
      }
    }
  }
}

TEST_P(BadInputNamesTest, SqlMetacharactersAreLiteralNames) {
  auto db1 = open();
  auto db2 = open();
  table_lock bystander(db1, "bystander");
  bystander.lock();
  const std::string bystander_row = read_lock_state(db1).lock_rows.at(0);
  for (const auto& kind : kinds()) {
    for (const auto& raw : metacharacter_names()) {
      const std::string name = own_name(kind, raw);
      SCOPED_TRACE(kind.name + " '" + shown(name) + "'");
      auto held = kind.take(db1, name, std::monostate{});
      ASSERT_TRUE(held);
      EXPECT_FALSE(kind.take(db2, name, std::monostate{})) << "held under exactly this name";
      if (kind.name == "table_lock") {
        const auto row = find_lock(db2, name);
        ASSERT_TRUE(row);
        EXPECT_EQ(row->resource, name);
        EXPECT_EQ(list_locks(db2).size(), 2u) << "this row and the bystander's, nothing else";
      }
      held.reset();
      if (kind.name == "row_lock") {
        EXPECT_TRUE(has_row_lock_row(db1, name));
      }
    }
  }
  // Released: looking up or force-releasing the names finds nothing and touches nobody else
  // (a wildcard or an injection would have matched the bystander).
  for (const auto& name : metacharacter_names()) {
    EXPECT_FALSE(find_lock(db2, name)) << shown(name);
    EXPECT_FALSE(force_release(db2, name)) << shown(name);
  }
  const auto after = read_lock_state(db1);
  ASSERT_EQ(after.lock_rows.size(), 1u);
  EXPECT_EQ(after.lock_rows[0], bystander_row);
  EXPECT_TRUE(bystander.holds());
}

INSTANTIATE_TEST_SUITE_P(bad_input, BadInputNamesTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
