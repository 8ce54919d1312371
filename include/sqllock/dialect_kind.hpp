// sqllock/dialect_kind.hpp — the SQL dialects sqllock speaks, and their names.
#pragma once

#include <string_view>

#include "sqllock/export.hpp"

namespace sqllock {

// The SQL dialects sqllock speaks. MySQL covers MySQL 8 and MariaDB 10.6+.
enum class dialect_kind { postgresql, mysql, sqlite };

// Returns "postgresql", "mysql" or "sqlite".
SQLLOCK_API std::string_view to_string(dialect_kind kind) noexcept;

}  // namespace sqllock
