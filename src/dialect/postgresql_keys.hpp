// The transaction-scoped advisory key every PostgreSQL acquire of a lock row takes before it draws
// a fence (see postgresql.cpp): one definition, because a table_lock and a multi_lock of the same
// name must queue on the same key — two spellings that drifted apart would let their fences
// commit out of order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sqllock::detail {

// The SQL expression of the key for the text expression `name` (a bigint).
inline std::string pg_acquire_key(std::string_view name) {
  std::string out = "hashtextextended(";
  out.append(name).append(", 7596553087245575019)");
  return out;
}

// The key of a table_lock attempt's gate (postgresql.cpp), which is only tried, never waited for:
// `name` hashed with a seed of the lock table's own, so that an acquire of the same name in
// another lock table never makes an attempt here fail its try.
inline std::string pg_gate_key(std::string_view name, std::string_view table) {
  std::uint64_t seed = 1469598103934665603ULL;  // FNV-1a of the table's name
  for (const char c : table) seed = (seed ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  std::string out = "hashtextextended(";
  out.append(name).append(", ").append(std::to_string(static_cast<std::int64_t>(seed >> 1))).append(")");
  return out;
}

}  // namespace sqllock::detail
