// libFuzzer target: lock-name and table-name validation (src/common/lock_name.cpp) and the SQL text
// helpers that handle the table name (src/common/sql_text.cpp), on arbitrary bytes.
//
// Besides crashes and sanitizer reports it checks the documented contracts against independent
// models:
//   * validate_lock_name accepts exactly 1–255 bytes of well-formed UTF-8 without NUL; the UTF-8
//     model follows the Unicode standard's table of well-formed byte sequences (Table 3-7), a
//     different formulation from the library's decoder;
//   * validate_table_name accepts exactly [A-Za-z_][A-Za-z0-9_]{0,47}; an accepted name quoted for
//     any dialect is the name between two quote characters, which cannot occur inside it;
//   * every refusal is invalid_argument; a refused name gets a one-line message;
//   * expand_table_template leaves text without "{{" unchanged, and split_sql_script returns
//     trimmed, non-empty statements.
// The first byte picks the dialect for quoting and templates; the rest is the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/lock_name.hpp"
#include "common/sql_text.hpp"
#include "sqllock/error.hpp"

namespace {

using sqllock::dialect_kind;
namespace d = sqllock::detail;

[[noreturn]] void fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "fuzz_names: %s; input (%zu bytes):", what, input.size());
  for (unsigned char c : input) std::fprintf(stderr, " %02x", c);
  std::fprintf(stderr, "\n");
  std::abort();
}

// Unicode Table 3-7: the well-formed UTF-8 byte sequences, range by range.
bool well_formed_utf8(std::string_view s) {
  auto in = [](unsigned char c, unsigned lo, unsigned hi) { return c >= lo && c <= hi; };
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
    const unsigned char c = b(0);
    if (c <= 0x7F) {
      i += 1;
    } else if (in(c, 0xC2, 0xDF) && in(b(1), 0x80, 0xBF)) {
      i += 2;
    } else if ((c == 0xE0 && in(b(1), 0xA0, 0xBF) && in(b(2), 0x80, 0xBF)) ||
               ((in(c, 0xE1, 0xEC) || in(c, 0xEE, 0xEF)) && in(b(1), 0x80, 0xBF) && in(b(2), 0x80, 0xBF)) ||
               (c == 0xED && in(b(1), 0x80, 0x9F) && in(b(2), 0x80, 0xBF))) {
      i += 3;
    } else if ((c == 0xF0 && in(b(1), 0x90, 0xBF) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF)) ||
               (in(c, 0xF1, 0xF3) && in(b(1), 0x80, 0xBF) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF)) ||
               (c == 0xF4 && in(b(1), 0x80, 0x8F) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF))) {
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

bool valid_table_name_model(std::string_view s) {
  if (s.empty() || s.size() > 48) return false;
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!letter(s[0])) return false;
  for (char c : s)
    if (!letter(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

// Runs `check`, which must either pass (returns true) or throw invalid_argument (returns false),
// with a message on one line when `one_line` (messages about what a caller passed end up in logs
// and on terminals; templates come from sqllock's own migration files).
template <class F>
bool accepted(F&& check, std::string_view input, bool one_line = true) {
  try {
    check();
    return true;
  } catch (const sqllock::invalid_argument& e) {
    const std::string_view what = e.what();
    if (what.empty()) fail("empty refusal message", input);
    if (one_line && (what.find('\n') != std::string_view::npos || what.find('\r') != std::string_view::npos))
      fail("refusal message spans lines", input);
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const dialect_kind dialect = static_cast<dialect_kind>(data[0] % 3);
  const std::string_view s(reinterpret_cast<const char*>(data + 1), size - 1);

  const bool utf8 = well_formed_utf8(s);
  if (d::is_valid_utf8(s) != utf8) fail("is_valid_utf8 disagrees with Unicode Table 3-7", s);
  const bool lock_ok = !s.empty() && s.size() <= d::kMaxLockName && s.find('\0') == std::string_view::npos && utf8;
  if (accepted([&] { d::validate_lock_name(s); }, s) != lock_ok) fail("validate_lock_name disagrees with the model", s);

  const bool table_ok = valid_table_name_model(s);
  if (accepted([&] { d::validate_table_name(s); }, s) != table_ok)
    fail("validate_table_name disagrees with the model", s);
  if (table_ok) {
    const std::string q = d::quote_identifier(dialect, s);
    const char mark = dialect == dialect_kind::mysql ? '`' : '"';
    if (q.size() != s.size() + 2 || q.front() != mark || q.back() != mark || q.substr(1, s.size()) != s)
      fail("quote_identifier is not the name between quotes", s);
  }

  std::string expanded;
  if (accepted([&] { expanded = d::expand_table_template(s, dialect, "t"); }, s, false) &&
      s.find("{{") == std::string_view::npos && expanded != s)
    fail("expand_table_template changed text without templates", s);

  for (const auto& statement : d::split_sql_script(s)) {
    if (statement.empty()) fail("split_sql_script returned an empty statement", s);
    const char first = statement.front(), last = statement.back();
    if (first == ' ' || first == '\t' || first == '\r' || last == ' ' || last == '\t' || last == '\r')
      fail("split_sql_script returned an untrimmed statement", s);
  }
  return 0;
}
