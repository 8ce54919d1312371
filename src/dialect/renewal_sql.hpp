// The renewal of everything one database handle holds, across the tables it holds leases in: lock
// rows, semaphore permits, wait-queue entries. The watchdog (core/lease_registry) runs these steps
// once per period with $1 = the handle's holder session. A handle with leases in one table sends
// that table's own renewal. On PostgreSQL the leases of several tables are renewed by one statement (each table's rows locked in key order, then updated: see
// dialect/postgresql_renew.hpp); MySQL/MariaDB and SQLite run each table's own renewal in turn.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dialect/lease_table.hpp"
#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

struct renewal_step {
  // $1 holder session. Returns the leases still held as (resource, owner_token, fence) — with a
  // fourth column tagging each row's store (core/lease/lease_store.hpp lease_store_of_tag) when `tag`
  // is 0 — unless `readback` is set: then it only updates, and `readback` (same parameter)
  // returns those rows.
  std::string statement;
  std::string readback;
  // The store tag of every row ('l' lock rows, 'p' permits), or 0: each row has its own.
  char tag = 0;
};

// The steps for the lease tables in `tables` (not empty), for `kind` and the (validated, unquoted)
// lock table name. Cached: the same object for the same arguments.
std::shared_ptr<const std::vector<renewal_step>> renewal_statements(dialect_kind kind, const std::string& table,
                                                                    lease_table_set tables);

}  // namespace sqllock::detail
