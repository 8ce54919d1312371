// The tables a fault run adds next to sqllock's own, per dialect:
//   fault_data (k, v, max_fence, u)  one row per resource: v is the fenced counter, max_fence the
//                                    highest fence it accepted, u the unfenced counter
//   fault_grants                     a server-side log of every table_lock grant, kept by
//                                    triggers on the lock table (test-only; the library never
//                                    sees them): granted_at, the latest expires_at, when the
//                                    row was taken over or deleted and when the grant was
//                                    logged, all on the database clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::fault {

// The statements a worker runs, for one dialect. $1 = resource, $2 = a number.
struct data_sql {
  std::string read;            // SELECT u, <database clock in µs since 1970> WHERE k = $1
  std::string fenced_write;    // v + 1, max_fence = $2, only when max_fence <= $2
  std::string plain_write;     // v + 1 (lock kinds without fences)
  std::string unfenced_write;  // u = $2
};
const data_sql& data_statements(dialect_kind d);

// Creates sqllock's schema (migrate) and the fault tables and triggers, with one fault_data row
// per resource "r0" … "r<count-1>". For a fresh database only.
void create_schema(const database& db, int resources);

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
};
// Every grant, per resource in the order the grants took effect (logged_at).
std::vector<grant_row> read_grants(const database& db);

struct data_row {
  std::string resource;
  std::int64_t v = 0, max_fence = 0, u = 0;
};
std::vector<data_row> read_data(const database& db);

}  // namespace sqllock::fault
