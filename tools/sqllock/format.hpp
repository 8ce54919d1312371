// Output helpers for the operator commands: JSON strings, terminal-safe text and aligned tables.
// Lock names may hold any UTF-8 (quotes, backslashes, control characters), so nothing that came
// from the database is printed unescaped.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace sqllock::cli {

// `s` as a JSON string literal, quotes included: ", \ and control characters escaped (\n, \t,
// \u001f …), other UTF-8 kept as is; bytes that are not valid UTF-8 become U+FFFD, so the output
// is always valid JSON.
std::string json_quote(std::string_view s);

// `s` for a terminal or a log: printable UTF-8 kept, backslash doubled, control characters and
// invalid bytes as C-style escapes (\n, \t, \x01, \xff), so that each value stays on one line
// and cannot move the cursor.
std::string printable(std::string_view s);

// Milliseconds as seconds with three decimals: 29512 → "29.512", -3200 → "-3.200".
std::string seconds_text(long long ms);

// A table printed with columns padded to their widest cell (width in code points, of text
// already passed through printable()), separated by two spaces, with a header row.
class text_table {
 public:
  explicit text_table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace sqllock::cli
