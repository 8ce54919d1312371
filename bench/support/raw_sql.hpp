// What the "raw" baseline needs to issue exactly the statements sqllock issues: the library's own
// SQL text (taken from src/dialect, never retyped) and the parameter values table_store binds.
//
// Per cycle, sqllock sends (checked against the servers' statement logs):
//   table     PostgreSQL, SQLite: acquire, release_delete.
//             MariaDB: acquire, acquire_readback, release_delete.
//   advisory  pg_try_advisory_lock, pg_advisory_unlock (lock() tries first).
//   named     GET_LOCK(name, '0'), RELEASE_LOCK(name) (lock() tries first).
//   row       BEGIN / START TRANSACTION, probe, lock (FOR UPDATE), COMMIT.
//   semaphore PostgreSQL: permit acquire, permit release (dialect/permit_sql.hpp).
//             MariaDB: busy_slots, acquire (of a free slot picked at random), acquire_readback,
//             release. SQLite: busy_slots, acquire (of a free slot picked at random), release.
//   latch     count_down(): PostgreSQL, SQLite: count_down; MariaDB: count_down, read_back.
//             count_down(participant): PostgreSQL: count_down_participant. MariaDB: SET
//             TRANSACTION ISOLATION LEVEL READ COMMITTED, START TRANSACTION, lock_latch,
//             insert_arrival, decrement, COMMIT. SQLite: BEGIN IMMEDIATE, lock_latch,
//             insert_arrival, decrement, COMMIT (dialect/latch_sql.hpp).
//   fair, rw  (an uncontended write level; dialect/queue_sql.hpp) PostgreSQL: enqueue, check,
//             release. MariaDB: enqueue, enqueue_readback, check, check_read, release. SQLite:
//             enqueue, check, check_read, release.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "driver/connection.hpp"
#include "sqllock/database.hpp"
#include "driver/placeholders.hpp"
#include "dialect/dialect.hpp"
#include "dialect/latch_sql.hpp"
#include "dialect/permit_sql.hpp"
#include "dialect/queue_sql.hpp"
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

// sqllock's semaphore permit and latch statements for `kind` on kCycleTable.
const detail::permit_sql& permit_sql_of(dialect_kind kind);
const detail::latch_sql& latch_sql_of(dialect_kind kind);

// The permit acquire's parameters as permit_store binds them, for `permits` slots, held by this
// process's thread `thread` (30 s lease, auto-renew on). PostgreSQL: $1 resource, $2 N, $3 owner,
// $4 session, $5 host, $6 pid, $7 thread, $8 lease ms, $9 auto-renew. MySQL and SQLite, which pick
// the slot on the client (`slot` given): $1 resource, $2 slot, $3 … $9 as before, $10 N.
std::vector<detail::value> permit_params(const std::string& resource, std::int64_t permits, int thread);
std::vector<detail::value> permit_params_picked(const std::string& resource, std::int64_t slot, std::int64_t permits,
                                                int thread);

// sqllock's wait-queue statements (fair_lock, rw_lock) for `kind` on kCycleTable.
const detail::queue_sql& queue_sql_of(dialect_kind kind);

// The enqueue's ten parameters as queue_store binds them for a write level of the queue kind
// `queue_kind` ('F' fair, 'R' read-write), held by this process's thread `thread` (30 s lease,
// auto-renew on): $1 resource, $2 kind, $3 owner, $4 session, $5 host, $6 pid, $7 thread, $8 lease
// ms, $9 auto-renew, $10 write (1).
std::vector<detail::value> enqueue_params(const std::string& resource, char queue_kind, int thread);

// Arms the latch `name` of db with the largest count (sqllock::latch::try_create), so that no
// benchmark phase counts it down to zero; an armed latch of that name is left as it is.
void arm_latch(const database& db, const std::string& name);

// The values of `params` in the order the native placeholders of `s` take them.
std::vector<detail::value> in_native_order(const detail::native_statement& s, const std::vector<detail::value>& params);

}  // namespace sqllock::bench
