// Guard statements for PostgreSQL, MySQL/MariaDB and SQLite.
#include "dialect/guard_sql.hpp"

#include <string_view>

#include "common/sql_text.hpp"
#include "dialect/per_table_cache.hpp"

namespace sqllock::detail {
namespace {

// The guard of each lease table, from `form` with @T for the table and @F for its fence column.
guard_sql::forms build(dialect_kind kind, const std::string& table, std::string_view form, bool writes) {
  const auto fill = [&](std::string_view t, std::string_view fence) {
    std::string out;
    for (std::size_t i = 0; i < form.size(); ++i) {
      if (form[i] == '@' && i + 1 < form.size() && (form[i + 1] == 'T' || form[i + 1] == 'F')) {
        out.append(form[i + 1] == 'T' ? t : fence);
        ++i;
      } else {
        out.push_back(form[i]);
      }
    }
    return expand_table_template(out, kind, table);
  };
  guard_sql::forms s;
  s.locks = fill("{{table}}", "fence");
  s.permits = fill("{{table_permits}}", "fence");
  s.queue = fill("{{table_queue}}", "ticket");
  s.writes = writes;
  return s;
}

guard_sql postgresql(const std::string& table) {
  return {build(dialect_kind::postgresql, table,
                "SELECT 1 FROM @T WHERE resource = CAST($1 AS text) AND owner_token = CAST($2 AS text)"
                " AND @F = CAST($3 AS bigint) AND expires_at > clock_timestamp() FOR SHARE",
                false),
          {}};
}

guard_sql mysql(const std::string& table) {
  return {build(dialect_kind::mysql, table,
                "SELECT 1 FROM @T WHERE resource = $1 AND owner_token = $2 AND @F = $3"
                " AND expires_at > UTC_TIMESTAMP(6) LOCK IN SHARE MODE",
                false),
          build(dialect_kind::mysql, table,
                "UPDATE @T SET renewed_at = GREATEST(UTC_TIMESTAMP(6), renewed_at + INTERVAL 1 MICROSECOND)"
                " WHERE resource = $1 AND owner_token = $2 AND @F = $3 AND expires_at > UTC_TIMESTAMP(6)",
                true)};
}

guard_sql sqlite(const std::string& table) {
  return {build(dialect_kind::sqlite, table,
                "UPDATE @T SET @F = @F WHERE resource = $1 AND owner_token = $2 AND @F = $3"
                " AND expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now')",
                true),
          {}};
}

}  // namespace

std::shared_ptr<const guard_sql> guard_statements(dialect_kind kind, const std::string& table) {
  return per_table_cache<guard_sql>::get(kind, table, postgresql, mysql, sqlite);
}

}  // namespace sqllock::detail
