// Rewrites sqllock's neutral placeholders ($1, $2, …) into a client library's own syntax.
//
// Dialects write every statement with PostgreSQL-style numbered placeholders; a number may
// appear more than once. Libraries that bind by position ('?' for Connector/C++, ':pN' for SOCI)
// need one native placeholder per occurrence, so the rewrite also returns, for each native
// placeholder in order, which parameter it takes. Text inside quotes and comments is left alone.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sqllock::detail {

enum class placeholder_style {
  dollar,    // $1, $2 … kept as written (libpq)
  question,  // ? per occurrence (MySQL Connector/C++)
  colon,     // :p1, :p2 … one distinct name per occurrence (SOCI)
};

struct native_statement {
  std::string sql;
  // order[i] is the 0-based index of the parameter bound to the i-th native placeholder.
  std::vector<std::size_t> order;
};

// Throws sqllock::invalid_argument for "$0" or a "$" not followed by a number outside quotes.
native_statement rewrite_placeholders(std::string_view sql, placeholder_style style);

}  // namespace sqllock::detail
