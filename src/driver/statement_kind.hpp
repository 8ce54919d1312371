// Tells a read-only query from a write by its first keyword.
//
// PostgreSQL reports "SELECT n" as a command's row count, and libpq hands that back as the
// number of affected rows. The seam reports 0 for queries, so drivers over libpq use this to tell
// the two apart when the library does not expose the command tag.
#pragma once

#include <cctype>
#include <string_view>

namespace sqllock::detail {

// True when `sql` starts (after blanks, comments and opening parentheses) with SELECT, VALUES,
// TABLE or WITH: statements whose command tag counts returned rows, not changed ones. A WITH
// whose CTEs write is counted as a query too, as PostgreSQL itself does.
inline bool is_query_statement(std::string_view sql) noexcept {
  std::size_t i = 0;
  while (i < sql.size()) {
    const char c = sql[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == '(') {
      ++i;
    } else if (sql.substr(i, 2) == "--") {
      const std::size_t end = sql.find('\n', i);
      i = end == std::string_view::npos ? sql.size() : end + 1;
    } else if (sql.substr(i, 2) == "/*") {
      const std::size_t end = sql.find("*/", i + 2);
      i = end == std::string_view::npos ? sql.size() : end + 2;
    } else {
      break;
    }
  }
  std::size_t end = i;
  while (end < sql.size() && std::isalpha(static_cast<unsigned char>(sql[end]))) ++end;
  const std::string_view word = sql.substr(i, end - i);
  const auto is = [word](std::string_view keyword) {
    if (word.size() != keyword.size()) return false;
    for (std::size_t k = 0; k < word.size(); ++k) {
      if (std::tolower(static_cast<unsigned char>(word[k])) != keyword[k]) return false;
    }
    return true;
  };
  return is("select") || is("values") || is("table") || is("with");
}

}  // namespace sqllock::detail
