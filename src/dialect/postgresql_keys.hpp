// The transaction-scoped advisory key every PostgreSQL acquire of a lock row takes before it draws
// a fence (see postgresql.cpp): one definition, because a table_lock and a multi_lock of the same
// name must queue on the same key — two spellings that drifted apart would let their fences
// commit out of order.
#pragma once

#include <string>
#include <string_view>

namespace sqllock::detail {

// The SQL expression of the key for the text expression `name` (a bigint).
inline std::string pg_acquire_key(std::string_view name) {
  std::string out = "hashtextextended(";
  out.append(name).append(", 7596553087245575019)");
  return out;
}

}  // namespace sqllock::detail
