// Identifier checks and the small amount of SQL text handling the core needs: quoting the
// configured table name, expanding {{table}} templates, and splitting a migration script.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

// Longest accepted table name: "<table>_<suffix>" must still fit PostgreSQL's 63-byte limit.
inline constexpr std::size_t kMaxTableName = 48;

// Throws invalid_argument unless `name` is 1–48 characters of [A-Za-z0-9_], not starting with a
// digit. Reserved words are fine: names are always quoted.
void validate_table_name(std::string_view name);

// `name` quoted for the dialect: "name" (PostgreSQL, SQLite) or `name` (MySQL). The name must
// already be valid, so no escaping is needed.
std::string quote_identifier(dialect_kind dialect, std::string_view name);

// Replaces every {{table}} with the quoted table name and every {{table_<suffix>}} with the
// quoted "<table>_<suffix>". Throws invalid_argument for any other {{…}}.
std::string expand_table_template(std::string_view text, dialect_kind dialect, std::string_view table);

// Splits a script into statements. A statement ends at a line ending with the current delimiter
// (";" unless changed by a mysql-client style "DELIMITER xx" line); comment-only lines are
// dropped. The delimiter itself is not part of the returned statement.
std::vector<std::string> split_sql_script(std::string_view script);

}  // namespace sqllock::detail
