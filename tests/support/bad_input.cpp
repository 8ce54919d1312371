#include "support/bad_input.hpp"

#include "support/fresh_database.hpp"
#include "support/lock_rows.hpp"

namespace sqllock::test {
namespace {

using namespace std::string_literals;

std::string quoted(const database& db, const std::string& identifier) {
  const char q = db.dialect() == dialect_kind::mysql ? '`' : '"';
  return q + identifier + q;
}

// Each row of `statement` as its fields joined by '|' (NULL as "NULL").
std::vector<std::string> joined_rows(const database& db, const std::string& statement) {
  std::vector<std::string> out;
  for (const auto& r : sql(db, statement).rows) {
    std::string line;
    for (const auto& f : r) {
      if (!line.empty()) line += '|';
      line += f.value_or("NULL");
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace

std::vector<bad_name> bad_lock_names() {
  return {
      {"empty", "", "empty", true},
      {"256 bytes", std::string(256, 'a'), "256 bytes; the limit is 255", true},
      {"255 bytes + one 2-byte character", std::string(255, 'a') + "\xc3\xa9", "257 bytes", true},
      {"4000 bytes", std::string(4000, 'x'), "4000 bytes", true},
      {"stray continuation byte", "a\x80z", "not valid UTF-8", true},
      {"overlong '/'", "\xc0\xaf", "not valid UTF-8", true},
      {"UTF-16 surrogate", "\xed\xa0\x80", "not valid UTF-8", true},
      {"beyond U+10FFFF", "\xf4\x90\x80\x80", "not valid UTF-8", true},
      {"truncated sequence", "euro\xe2\x82", "not valid UTF-8", true},
      {"0xFF byte", "\xff", "not valid UTF-8", true},
      {"Latin-1 'é'", "caf\xe9", "not valid UTF-8", true},
      {"embedded NUL", "a\0b"s, "NUL", false},
      {"only a NUL", "\0"s, "NUL", false},
      {"trailing NUL", "job\0"s, "NUL", false},
  };
}

std::vector<std::string> at_limit_names() {
  std::string euros;
  for (int i = 0; i < 85; ++i) euros += "\xe2\x82\xac";                               // 85 × '€' (3 bytes)
  return {std::string(255, 'n'), euros, std::string(251, 'k') + "\xf0\x9f\x94\x92"};  // … + '🔒' (4 bytes)
}

std::vector<std::pair<std::string, std::string>> distinct_name_pairs() {
  // Kept by hand: clang-format 14 would split literals such as "stra\xc3\x9f" "e" over two lines.
  // clang-format off
  return {
      {"Job", "job"},
      {"caf\xc3\xa9", "cafe\xcc\x81"},  // 'é' precomposed (NFC) and 'e' + combining acute (NFD)
      {"\xc3\x85", "\xe2\x84\xab"},     // 'Å' and the canonically equivalent ANGSTROM SIGN
      {"stra\xc3\x9f" "e", "strasse"},  // 'ß' and its case folding
      {"a", "a "},                      // PAD SPACE collations would make these equal
      {"%", "anything"},                // LIKE wildcards, if a query ever used LIKE
      {"a_c", "abc"},
      {"\\", "\\\\"},                   // backslash escaping, if a driver ever did it
  };
  // clang-format on
}

std::vector<std::string> metacharacter_names() {
  return {
      "'",
      "''",
      "\"",
      "`",
      "\\",
      "\\'",
      "';--",
      "' OR '1'='1",
      "x'); DROP TABLE distributed_lock; --",
      "x\"; DROP TABLE \"distributed_lock\"; --",
      "/* comment */",
      "-- comment",
      "%",
      "_",
      "$1",
      "?",
      ":name",
      "{{table}}",
      "; SELECT 1;\n",
      "\x1b[2J\r\t",
  };
}

std::vector<bad_table> bad_table_names() {
  // clang-format off
  return {
      {"empty", ""},
      {"49 characters", std::string(49, 't')},
      {"starts with a digit", "1locks"},
      {"hyphen", "my-locks"},
      {"space", "my locks"},
      {"schema-qualified", "public.locks"},
      {"double-quote injection", "t\"; DROP TABLE x; --"},
      {"backtick injection", "t`; DROP TABLE x; --"},
      {"statement injection", "x; DROP TABLE y"},
      {"non-ASCII letter", "l\xc3\xb6" "cks"},
      {"invalid UTF-8", "locks\xff"},
      {"embedded NUL", "lo\0cks"s},
      {"newline", "locks\nDROP"},
  };
  // clang-format on
}

std::vector<std::string> unusual_valid_table_names() { return {"select", "user", "order", "T" + std::string(47, 'x')}; }

lock_state read_lock_state(const database& db) {
  lock_state s;
  s.lock_rows = joined_rows(db, "SELECT resource, owner_token, holder_session, count, fence FROM " +
                                    quoted(db, db.table()) + " ORDER BY resource");
  if (db.dialect() != dialect_kind::sqlite)
    s.row_lock_rows = joined_rows(db,
                                  "SELECT resource FROM " + quoted(db, db.table() + "_rows") + " ORDER BY resource");
  s.fence_source = fence_source_value(db);
  return s;
}

void PrintTo(const lock_state& s, std::ostream* os) {
  *os << "{fence source " << s.fence_source << "; lock rows:";
  for (const auto& r : s.lock_rows) *os << " [" << r << "]";
  *os << "; row-lock rows:";
  for (const auto& r : s.row_lock_rows) *os << " [" << r << "]";
  *os << "}";
}

}  // namespace sqllock::test
