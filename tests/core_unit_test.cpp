// Unit tests of the core's text handling; no database needed.
#include <gtest/gtest.h>

#include "common/sha256.hpp"
#include "common/sql_text.hpp"
#include "common/uri.hpp"
#include "driver/placeholders.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths around the padding boundary (55, 56, 63, 64 bytes) must not crash or collide.
  EXPECT_NE(sha256_hex(std::string(55, 'x')), sha256_hex(std::string(56, 'x')));
  EXPECT_NE(sha256_hex(std::string(63, 'x')), sha256_hex(std::string(64, 'x')));
}

TEST(Uri, PostgresqlPicksPqxxAndKeepsTheUriForLibpq) {
  const auto s = parse_uri("postgresql://alice:s%40cret@db.example:6543/app?sslmode=disable");
  EXPECT_EQ(s.driver, driver_kind::pqxx);
  EXPECT_EQ(s.dialect, dialect_kind::postgresql);
  EXPECT_EQ(s.user, "alice");
  EXPECT_EQ(s.password, "s@cret");
  EXPECT_EQ(s.host, "db.example");
  EXPECT_EQ(s.port, 6543);
  EXPECT_EQ(s.database, "app");
  EXPECT_EQ(s.param("sslmode"), "disable");
  EXPECT_EQ(s.native_uri, "postgresql://alice:s%40cret@db.example:6543/app?sslmode=disable");
  EXPECT_EQ(s.display, "postgresql://alice:***@db.example:6543/app?sslmode=disable");
}

TEST(Uri, MysqlAndMariadbAndSociPrefixes) {
  EXPECT_EQ(parse_uri("mysql://u@h/d").driver, driver_kind::mysql);
  EXPECT_EQ(parse_uri("mariadb://u@h/d").dialect, dialect_kind::mysql);
  EXPECT_EQ(parse_uri("mariadb://u@h/d").native_uri, "mysql://u@h/d");
  const auto soci = parse_uri("soci+mysql://u:p@h:3307/d");
  EXPECT_EQ(soci.driver, driver_kind::soci);
  EXPECT_EQ(soci.dialect, dialect_kind::mysql);
  EXPECT_EQ(soci.native_uri, "mysql://u:p@h:3307/d");
  EXPECT_EQ(parse_uri("soci+postgresql://h/d").driver, driver_kind::soci);
  EXPECT_EQ(parse_uri("mysql://u@/d?socket=/run/my.sock").param("socket"), "/run/my.sock");
  EXPECT_EQ(parse_uri("postgresql://[::1]:5433/d").host, "::1");
  EXPECT_EQ(parse_uri("postgresql://[::1]:5433/d").port, 5433);
}

TEST(Uri, MultiHostPostgresqlUrisGoToLibpqAsWritten) {
  const std::string uri = "postgresql://u@10.0.0.1:5432,10.0.0.2:5433,[::1]:5434/app?target_session_attrs=read-write";
  const auto s = parse_uri(uri);
  EXPECT_EQ(s.host, "10.0.0.1:5432,10.0.0.2:5433,[::1]:5434");
  EXPECT_FALSE(s.port.has_value());
  EXPECT_EQ(s.database, "app");
  EXPECT_EQ(s.native_uri, uri);
  EXPECT_EQ(parse_uri("postgresql://h1,h2/app").host, "h1,h2");
  const auto params = parse_uri("postgresql:///app?host=h1,h2&port=5432,5433&target_session_attrs=read-write");
  EXPECT_EQ(params.param("host"), "h1,h2");
  for (const char* bad :
       {"postgresql://h1:5432,h2:99999/d", "postgresql://h1,,h2/d", "postgresql://h1:x,h2/d", "mysql://u@h1,h2/d"}) {
    EXPECT_THROW(parse_uri(bad), invalid_argument) << bad;
  }
}

TEST(Uri, SqllocksOwnParametersAreReadAndNeverReachTheClientLibrary) {
  EXPECT_TRUE(parse_uri("postgresql://h/d").prepare_statements);
  const auto off = parse_uri("postgresql://h/d?sslmode=disable&prepare=off&application_name=x");
  EXPECT_FALSE(off.prepare_statements);
  EXPECT_EQ(off.native_uri, "postgresql://h/d?sslmode=disable&application_name=x");
  EXPECT_TRUE(parse_uri("soci+postgresql://h/d?prepare=on").prepare_statements);
  EXPECT_EQ(parse_uri("soci+postgresql://h/d?prepare=on").native_uri, "postgresql://h/d");
  EXPECT_FALSE(parse_uri("mysql://u@h/d").galera_pinned);
  const auto pinned = parse_uri("mariadb://u@h/d?galera=pinned");
  EXPECT_TRUE(pinned.galera_pinned);
  EXPECT_EQ(pinned.native_uri, "mysql://u@h/d");
  for (const char* bad : {"postgresql://h/d?prepare=no", "mysql://u@h/d?prepare=off", "postgresql://h/d?galera=pinned",
                          "mysql://u@h/d?galera=yes"}) {
    EXPECT_THROW(parse_uri(bad), invalid_argument) << bad;
  }
}

TEST(Uri, SqliteForms) {
  EXPECT_EQ(parse_uri("sqlite:///var/lib/app/locks.db").path, "/var/lib/app/locks.db");
  EXPECT_EQ(parse_uri("sqlite:locks.db").path, "locks.db");
  EXPECT_EQ(parse_uri("sqlite://data/locks.db").path, "data/locks.db");
  EXPECT_EQ(parse_uri("sqlite:///tmp/a%20b.db").path, "/tmp/a b.db");
  EXPECT_EQ(parse_uri("sqlite:locks.db").driver, driver_kind::soci);
}

TEST(Uri, BadUrisSayWhatIsWrong) {
  for (const char* bad : {"", "nonsense", "redis://h/0", "postgresql:/h/d", "postgresql://h:0/d",
                          "postgresql://h:99999/d", "postgresql://h:port/d", "mysql:///d", "sqlite:", "sqlite://",
                          "postgresql://h/d%zz", "postgresql://h/d%0", "postgresql://h/a%00b", "mysql://u@h/d?flag"}) {
    EXPECT_THROW(parse_uri(bad), invalid_argument) << bad;
  }
  try {
    parse_uri("postgresql://bob:hunter2@h:99999/d");
  } catch (const invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << "password leaked: " << e.what();
  }
}

TEST(Placeholders, RewritesPerStyleAndSkipsQuotesAndComments) {
  const std::string sql = "SELECT $1, '$2', \"$3\", $2 -- $9\n, $1 /* $8 */";
  const auto dollar = rewrite_placeholders(sql, placeholder_style::dollar);
  EXPECT_EQ(dollar.sql, sql);
  EXPECT_EQ(dollar.order, (std::vector<std::size_t>{0, 1, 0}));
  const auto question = rewrite_placeholders(sql, placeholder_style::question);
  EXPECT_EQ(question.sql, "SELECT ?, '$2', \"$3\", ? -- $9\n, ? /* $8 */");
  const auto colon = rewrite_placeholders(sql, placeholder_style::colon);
  EXPECT_EQ(colon.sql, "SELECT :p1, '$2', \"$3\", :p2 -- $9\n, :p3 /* $8 */");
  EXPECT_EQ(colon.order, (std::vector<std::size_t>{0, 1, 0}));
  EXPECT_EQ(rewrite_placeholders("SELECT 'it''s $1'", placeholder_style::question).order.size(), 0u);
  EXPECT_EQ(rewrite_placeholders("SELECT $10", placeholder_style::question).order, (std::vector<std::size_t>{9}));
  EXPECT_THROW(rewrite_placeholders("SELECT $0", placeholder_style::question), invalid_argument);
  EXPECT_THROW(rewrite_placeholders("SELECT $x", placeholder_style::question), invalid_argument);
}

TEST(SqlText, TableNamesAreValidatedAndQuoted) {
  EXPECT_NO_THROW(validate_table_name("distributed_lock"));
  EXPECT_NO_THROW(validate_table_name("_x9"));
  EXPECT_NO_THROW(validate_table_name(std::string(48, 'a')));
  for (const std::string& bad : std::vector<std::string>{"", "9lives", "a-b", "a b", "a\"b", "a`b", "a;DROP TABLE x",
                                                         "ä", std::string(49, 'a'), std::string("a\0b", 3)}) {
    EXPECT_THROW(validate_table_name(bad), invalid_argument) << bad;
  }
  EXPECT_EQ(quote_identifier(dialect_kind::postgresql, "select"), "\"select\"");
  EXPECT_EQ(quote_identifier(dialect_kind::mysql, "select"), "`select`");
  EXPECT_EQ(expand_table_template("CREATE TABLE {{table}} ({{table_pkey}})", dialect_kind::sqlite, "t"),
            "CREATE TABLE \"t\" (\"t_pkey\")");
  EXPECT_THROW(expand_table_template("{{other}}", dialect_kind::sqlite, "t"), invalid_argument);
  EXPECT_THROW(expand_table_template("{{table", dialect_kind::sqlite, "t"), invalid_argument);
}

TEST(SqlText, SplitsScriptsOnDelimitersAndDropsComments) {
  const auto parts = split_sql_script(
      "-- header\nCREATE TABLE a (x int);\n\nINSERT INTO a VALUES (1);\n"
      "DELIMITER //\nCREATE TRIGGER t BEGIN\n  UPDATE a SET x = 1;\nEND//\nDELIMITER ;\nSELECT 1;\n");
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0], "CREATE TABLE a (x int)");
  EXPECT_EQ(parts[1], "INSERT INTO a VALUES (1)");
  EXPECT_EQ(parts[2], "CREATE TRIGGER t BEGIN\n  UPDATE a SET x = 1;\nEND");
  EXPECT_EQ(parts[3], "SELECT 1");
}

}  // namespace
}  // namespace sqllock::detail
