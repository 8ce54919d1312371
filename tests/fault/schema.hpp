// The tables a fault run adds next to sqllock's own, per dialect:
//   fault_data (k, v, max_fence, u, g)  one row per resource: v is the fenced counter, max_fence
//                                    the highest fence it accepted, u the unfenced counter, g the
//                                    guarded counter (fault/guarded_write.hpp)
//   fault_grants                     a server-side log of every table_lock grant, kept by
//                                    triggers on the lock table (test-only; the library never
//                                    sees them): granted_at, the latest expires_at, when the
//                                    row was taken over or deleted and when the grant was
//                                    logged, all on the database clock.
//   fault_permit_grants              the same log of every semaphore permit grant, kept by
//                                    triggers on the permits table, per (resource, slot).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::fault {

// The statements a worker runs, for one dialect. $1 = resource, $2 = a number.
struct data_sql {
  std::string read;            // SELECT u, <database clock in µs since 1970>, g WHERE k = $1
  std::string fenced_write;    // v + 1, max_fence = $2, only when max_fence <= $2
  std::string plain_write;     // v + 1 (lock kinds without fences)
  std::string unfenced_write;  // u = $2
};
const data_sql& data_statements(dialect_kind d);

// Creates sqllock's schema (migrate) and the fault tables and triggers, with one fault_data row
// per resource "r0" … "r<count-1>" and, with slots > 0, one per (resource, slot) below `slots`
// (slot_key: the semaphore kind's fenced counters). For a fresh database only.
void create_schema(const database& db, int resources, int slots = 0);

// The key of a semaphore's slot: "<resource>/<slot>" (fault_data rows, history lines, grants).
std::string slot_key(const std::string& resource, std::int64_t slot);

// Resource i's name.
std::string resource_name(int i);

struct grant_row {
  std::string resource;
  std::int64_t fence = 0;
  std::string owner;
  std::int64_t granted_us = 0;
  std::int64_t expires_us = 0;  // the latest expiry any renewal set
  std::optional<std::int64_t> taken_over_us, deleted_us;
  std::int64_t logged_us = 0;  // when the grant's trigger ran (after any wait of the acquire)
  std::string name;            // permit grants: the semaphore's name (resource is slot_key(name, slot))
  std::int64_t slot = -1;      // permit grants: the slot; -1 for lock grants
};
// Every grant, per resource in the order the grants took effect (logged_at).
std::vector<grant_row> read_grants(const database& db);
// Every semaphore permit grant, per (resource, slot) in the order the grants took effect.
std::vector<grant_row> read_permit_grants(const database& db);

struct data_row {
  std::string resource;
  std::int64_t v = 0, max_fence = 0, u = 0, g = 0;
};
std::vector<data_row> read_data(const database& db);

// Microseconds since 1970 of a timestamp column or expression `e`, on each dialect's clock type.
std::string micros(dialect_kind d, std::string_view e);
// The database clock at the moment a trigger runs (MariaDB: the real time, not the statement's start).
std::string_view trigger_now(dialect_kind d);

}  // namespace sqllock::fault
