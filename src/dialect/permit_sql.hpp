// The SQL of semaphore permits per dialect, with the table name filled in. Permits live in their
// own table, `<table>_permits` (migration 0003): one row per held slot (resource, slot), a lease
// like a lock row. Kept apart from dialect_sql, like row_lock_sql, so that lock rows and permits
// change independently; the renewal of a handle that holds both is still one statement on
// PostgreSQL (dialect/renewal_sql.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

// The largest N a semaphore may have. Each acquire considers every slot below N (PostgreSQL and
// SQLite enumerate them in the statement), so the bound keeps one attempt in the tens of
// microseconds of server time; a semaphore wider than this is a rate or a pool, not a lock.
inline constexpr std::int64_t kMaxPermits = 10000;

struct permit_sql {
  dialect_kind kind{};

  // ---- acquire
  // Where the free slot is chosen. False (PostgreSQL): `acquire` picks and takes it in
  // one statement: $1 resource, $2 N, $3 owner token, $4 holder session, $5 host, $6 pid,
  // $7 thread, $8 lease ms, $9 auto_renew (0/1) → no row when every slot below N holds a live
  // permit; (slot, fence) when granted; (slot, NULL) when the slot it picked was taken by a
  // concurrent acquire meanwhile (the core picks again among the slots still free).
  // True (MySQL, SQLite): `busy_slots` ($1 resource) → the slots with a live permit, read without
  // locks; the core picks a free one at random; `acquire` takes that slot with $2 = slot, $10 = N
  // and the other parameters as above. It returns (fence) when it took the slot and no row when a
  // live permit holds it — unless acquire_readback is set (MySQL): then it succeeds when it
  // affected a row, and acquire_readback ($1 resource, $2 slot, $3 owner) → fence.
  bool picks_slot_on_client = false;
  std::string acquire;
  std::string busy_slots;
  std::string acquire_readback;

  // $1 resource, $2 N → milliseconds (≥ 0) until the first live permit below N runs out; no row
  // (or NULL) when none is live. A waiter never sleeps past it.
  std::string lease_remaining;

  // $1 resource, $2 owner, $3 fence, and $4 the wake-up channel where the dialect has one →
  // one row or affected 1 when deleted. Owner tokens are unique per permit, so no slot is needed
  // (orphans found by the renewal are deleted with it too).
  std::string release;

  // $1 holder session: extends every live auto-renew permit of the session by its lease_ms and
  // returns (resource, owner, fence) of each — or, when renew_reads_back, renew_readback reads
  // them with the same parameter.
  std::string renew;
  bool renew_reads_back = false;
  std::string renew_readback;
};

// The permit statements for `kind` and the (validated, unquoted) lock table name. Cached: the same
// object for the same arguments.
std::shared_ptr<const permit_sql> permit_statements(dialect_kind kind, const std::string& table);

}  // namespace sqllock::detail
