#include "driver/placeholders.hpp"

#include <cctype>

#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// Copies a quoted run ('…', "…", `…`; a doubled quote stays inside) starting at sql[i].
std::size_t copy_quoted(std::string_view sql, std::size_t i, std::string& out) {
  const char quote = sql[i];
  out += quote;
  for (++i; i < sql.size(); ++i) {
    out += sql[i];
    if (sql[i] == quote) {
      if (i + 1 < sql.size() && sql[i + 1] == quote) {
        out += sql[++i];
        continue;
      }
      return i + 1;
    }
  }
  return i;
}

// Copies a comment ("-- …\n" or "/* … */") starting at sql[i].
std::size_t copy_comment(std::string_view sql, std::size_t i, std::string& out) {
  const bool line = sql[i] == '-';
  const std::string_view end = line ? "\n" : "*/";
  std::size_t stop = sql.find(end, i + 2);
  stop = stop == std::string_view::npos ? sql.size() : stop + end.size();
  out.append(sql.substr(i, stop - i));
  return stop;
}

}  // namespace

native_statement rewrite_placeholders(std::string_view sql, placeholder_style style) {
  native_statement st;
  st.sql.reserve(sql.size() + 8);
  std::size_t i = 0;
  while (i < sql.size()) {
    const char c = sql[i];
    if (c == '\'' || c == '"' || c == '`') {
      i = copy_quoted(sql, i, st.sql);
    } else if ((c == '-' && sql.substr(i, 2) == "--") || (c == '/' && sql.substr(i, 2) == "/*")) {
      i = copy_comment(sql, i, st.sql);
    } else if (c == '$') {
      std::size_t j = i + 1;
      std::size_t number = 0;
      while (j < sql.size() && std::isdigit(static_cast<unsigned char>(sql[j]))) {
        number = number * 10 + static_cast<std::size_t>(sql[j] - '0');
        if (number > 65535) throw invalid_argument("placeholder number too large in SQL: " + std::string(sql));
        ++j;
      }
      if (j == i + 1 || number == 0) {
        throw invalid_argument("malformed placeholder at offset " + std::to_string(i) +
                               " (expected $1, $2, …) in SQL: " + std::string(sql));
      }
      st.order.push_back(number - 1);
      switch (style) {
        case placeholder_style::dollar: st.sql.append(sql.substr(i, j - i)); break;
        case placeholder_style::question: st.sql += '?'; break;
        case placeholder_style::colon: st.sql += ":p" + std::to_string(st.order.size()); break;
      }
      i = j;
    } else {
      st.sql += c;
      ++i;
    }
  }
  return st;
}

}  // namespace sqllock::detail
