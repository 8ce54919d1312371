// sqllock/sqllock.hpp — everything in one include. Prefer the single headers in larger builds:
//   database.hpp  the handle to the lock database (start here)
//   dialect_kind.hpp  the SQL dialects, as database::dialect() names them
//   migrate.hpp   creating and upgrading the lock table
//   error.hpp     the exceptions sqllock throws
//   table_lock.hpp  a lease lock stored as a row (every database)
//   multi_lock.hpp  several table locks taken together, all or none (every database)
//   semaphore.hpp  at most N holders of a name: leased permits (every database)
//   fair_lock.hpp  a lease lock granted in arrival order (every database)
//   rw_lock.hpp   a fair read-write lock: shared readers, exclusive writers (every database)
//   advisory_lock.hpp  PostgreSQL advisory locks, session or transaction scope
//   named_lock.hpp  MySQL/MariaDB GET_LOCK locks
//   latch.hpp     a count-down latch: wait until N count-downs (every database)
//   lease_claim.hpp  a leased hold as a guard checks it in the application's own transaction
//   reaper.hpp    deleting expired lock rows
//   status.hpp    listing held locks, forced release (operators)
//   statement_deadline.hpp  a caller's deadline for the statements of its own waiting loop
//   row_lock.hpp  a lock that lives as long as a transaction (PostgreSQL, MySQL); the adapters in
//                 sqllock/adapters/ join an application's own transaction and are not included here
#pragma once

#include "sqllock/advisory_lock.hpp"
#include "sqllock/database.hpp"
#include "sqllock/dialect_kind.hpp"
#include "sqllock/error.hpp"
#include "sqllock/fair_lock.hpp"
#include "sqllock/latch.hpp"
#include "sqllock/lease_claim.hpp"
#include "sqllock/migrate.hpp"
#include "sqllock/multi_lock.hpp"
#include "sqllock/named_lock.hpp"
#include "sqllock/reaper.hpp"
#include "sqllock/row_lock.hpp"
#include "sqllock/rw_lock.hpp"
#include "sqllock/semaphore.hpp"
#include "sqllock/statement_deadline.hpp"
#include "sqllock/status.hpp"
#include "sqllock/table_lock.hpp"
