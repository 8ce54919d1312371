// What the "raw" baseline needs to issue exactly the statements sqllock issues: the library's own
// SQL text (taken from src/dialect, never retyped) and the parameter values table_store binds.
//
// Per cycle, sqllock sends (checked against the servers' statement logs):
//   table     PostgreSQL, SQLite: acquire, release_delete.
//             MariaDB: acquire, acquire_readback, release_delete.
//   advisory  pg_try_advisory_lock, pg_advisory_unlock (lock() tries first).
//   named     GET_LOCK(name, '0'), RELEASE_LOCK(name) (lock() tries first).
//   row       BEGIN / START TRANSACTION, probe, lock (FOR UPDATE), COMMIT.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "driver/connection.hpp"
#include "driver/placeholders.hpp"
#include "dialect/dialect.hpp"
#include "dialect/row_lock_sql.hpp"
#include "dialect/session_lock_sql.hpp"

namespace sqllock::bench {

// The lock table every cycle case uses.
inline constexpr const char* kCycleTable = "distributed_lock";

// sqllock's table-lock statements for `kind` on kCycleTable.
const detail::dialect_sql& table_sql(dialect_kind kind);
// sqllock's row-lock statements for `kind` on kCycleTable.
const detail::row_lock_sql& row_sql(dialect_kind kind);

// The acquire statement's eight parameters ($1 … $8) for resource `resource` held by this
// process's thread `thread`, as table_store::acquire binds them (30 s lease, auto-renew on).
std::vector<detail::value> acquire_params(const std::string& resource, int thread);
// The owner token in acquire_params (what release and read-back bind as $2).
std::string owner_of(int thread);

// The values of `params` in the order the native placeholders of `s` take them.
std::vector<detail::value> in_native_order(const detail::native_statement& s, const std::vector<detail::value>& params);

}  // namespace sqllock::bench
