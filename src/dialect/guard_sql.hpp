// The SQL of a guard: the statement that, inside an application's own transaction, checks that a
// leased row is still the caller's hold and keeps it so until that transaction ends (see
// core/lease/lease_guard.hpp for the contract, docs/design.md "Guarded writes" for why each form
// excludes a takeover).
#pragma once

#include <memory>
#include <string>

#include "dialect/lease_table.hpp"
#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

struct guard_sql {
  // One statement per lease table: $1 resource, $2 owner token, $3 fence (the queue's ticket). It
  // matches the row only while it is that owner's, with that fence, and unexpired by the database
  // clock read when the statement runs (not when the transaction began).
  //   PostgreSQL: SELECT … FOR SHARE, which every takeover, release by force, reap and the queue's
  //     delete of an expired entry waits for (they update or delete the row).
  //   MySQL/MariaDB: SELECT … LOCK IN SHARE MODE, InnoDB's locking read (it reads the newest
  //     committed row, not the transaction's snapshot), with the same effect.
  //   SQLite: an UPDATE that changes nothing, which makes the transaction the database's one writer
  //     until it ends; every takeover is a write and waits.
  // A match is one row returned (`writes` false) or one row affected (`writes` true).
  struct forms {
    std::string locks;
    std::string permits;
    std::string queue;
    bool writes = false;

    const std::string& of(lease_table table) const noexcept {
      switch (table) {
        case lease_table::permits: return permits;
        case lease_table::queue: return queue;
        case lease_table::locks: break;
      }
      return locks;
    }
  };
  forms check;
  // MySQL/MariaDB on a multi-node Galera cluster, where a locking read holds back nothing on the
  // other nodes: the guard writes the row instead (renewed_at moves forward, at least by a
  // microsecond, so the row is changed and in the transaction's write set; nothing reads it but
  // status displays). Certification then lets the guarded
  // transaction and a takeover of the row on another node not both commit. Empty elsewhere.
  forms replicated;
};

std::shared_ptr<const guard_sql> guard_statements(dialect_kind kind, const std::string& table);

}  // namespace sqllock::detail
