// sqllock/migrate.hpp — creating and upgrading sqllock's tables.
//
// sqllock ships numbered migrations per dialect (compiled into the library). migrate() applies
// the ones a database lacks and records each, with a checksum, in `sqllock_schema_migrations`.
// Run it once at deploy time (or `sqllock migrate --db URI`) with a role that may create tables;
// the locks themselves only need SELECT/INSERT/UPDATE/DELETE on the lock table.
#pragma once

#include "sqllock/export.hpp"

#include <string>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock {

// What one migrate() call did.
struct migrate_result {
  // Versions applied by this call, in order; empty when the schema was already current.
  std::vector<int> applied;
  // The schema version after the call (the newest migration this library knows).
  int version = 0;
};

// One embedded migration, as shipped with this library.
struct migration_info {
  int version;
  std::string name;      // e.g. "create_distributed_lock"
  std::string checksum;  // hex digest of the file text as shipped
};

// Brings the lock table named by db.table() up to the newest schema this library knows.
// Idempotent, and safe when many processes migrate one database at once: a database-level lock
// serialises them and each migration is applied exactly once. When the schema is already current
// it only reads `sqllock_schema_migrations` (no DDL, no lock), so an application may call it at
// every start even with a role limited to SELECT/INSERT/UPDATE/DELETE.
// Throws schema_error when an applied migration's checksum differs from the shipped file (it was
// edited) or the database records a version newer than this library knows (upgrade sqllock);
// permission_denied when the role may not create or alter the tables (migrate as their owner);
// connection_error / backend_error when the database fails.
SQLLOCK_API migrate_result migrate(const database& db);

// The migrations this library ships for a dialect, oldest first.
SQLLOCK_API std::vector<migration_info> known_migrations(dialect_kind dialect);

// The newest schema version applied to db.table(), or 0 when none is.
// Throws connection_error / backend_error when the database fails.
SQLLOCK_API int schema_version(const database& db);

}  // namespace sqllock
