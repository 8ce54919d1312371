// The SQL of the wait queue per dialect, with the table name filled in. The queue, `<table>_queue`
// (migration 0005), holds the entries of fair locks (kind 'F') and read-write locks (kind 'R'):
// one row per (resource, kind, owner), waiting or holding, a lease like a lock row. Its ticket is
// drawn from the lock table's fence source under a per-name ordering like a lock row's fence, so
// per resource a lower ticket is always committed before a higher one is drawn (T3): arrival order
// at the database is ticket order, and grants follow it. Tickets rise across every entry of a name
// (both kinds, and entries that left), so a ticket is usable as a fencing token.
//
// An entry is a *writer* while write_count > 0, else a *reader* (read_count > 0); the columns are
// not called writes/reads because READS is a reserved word on MySQL/MariaDB. A fair-lock entry is
// always a writer (the table refuses read levels on it). An entry holds when it is live
// (expires_at > now) and no entry of its resource and kind with a lower ticket blocks it: every
// entry ahead blocks a writer; only writers ahead block a reader. Entries of the two kinds never
// see each other.
//
// Expiry ahead is decided only under a row lock: `check` deletes the expired entries ahead of the
// ticket, re-checking expiry on each row's newest version, and every entry ahead that it did not
// delete counts as live — also one whose lease ran out just after (it is deleted by the next
// check). A read that judged expiry by itself could miss a renewal that read its clock earlier
// and committed later, and grant while the renewed entry still holds.
#pragma once

#include <memory>
#include <string>

#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

struct queue_sql {
  dialect_kind kind{};

  // ---- enqueue: takes a place, or adds a level to the owner's entry.
  // $1 resource, $2 kind ('F' or 'R'), $3 owner token, $4 holder session, $5 host, $6 pid,
  // $7 thread, $8 lease ms, $9 auto_renew (0/1), $10 write (1: a write level, 0: a read level).
  // Without an entry of (resource, kind, owner), or with an expired one (replaced whole): a new
  // entry with a new ticket, write_count = $10, read_count = 1 − $10, expires_at = now + lease.
  // With a live one: write_count + 1 or read_count + 1 and nothing else (its lease, session and
  // ticket stay) — except that a write level asked of a live reader entry (write_count = 0: an
  // upgrade) changes nothing; the core sees writes = 0 and refuses it.
  // Returns (ticket, writes, reads) of the entry — or, when enqueue_reads_back (MySQL), nothing,
  // and enqueue_readback ($1 resource, $2 kind, $3 owner) returns it: no row when the entry was
  // deleted in between (a release by force), and the core queues again.
  std::string enqueue;
  bool enqueue_reads_back = false;
  std::string enqueue_readback;

  // ---- check: is the entry at its turn?
  // $1 resource, $2 kind, $3 ticket, $4 owner. Looks at the *window*: the first 32 entries ahead
  // of the ticket that block it (by the entry's own mode as stored now; as a writer when it is
  // gone), in ticket order — so a check costs the same at any place in the queue. Deletes the
  // window's expired entries (re-checking expiry on the newest row version, so an entry renewed
  // meanwhile stays), and returns one row (mine, blockers, wait_ms): mine = 1 when the entry
  // (resource, kind, ticket, owner) exists and is live, else 0; blockers = the window's entries
  // that the delete left (at most 32; a full window the delete emptied counts 1, as the entries
  // behind it are unread); wait_ms = milliseconds (≥ 0) until the first of those leases runs out
  // (0 for the emptied full window), NULL when there are no blockers. The entry holds when
  // mine = 1 and blockers = 0.
  // When check_read is not empty (MySQL, SQLite: no data-modifying CTEs), the check is up to three
  // autocommit statements, at the server's default isolation level (docs/design.md, "Wait queue",
  // for MySQL's locks): `check_read` ($1 … $4) returns (mine, blockers, wait_ms, expired, last),
  // the window's blockers still there, of which `expired` have expired, and the window's last
  // ticket; when expired > 0, `check` ($1 … $4, $5 = last) deletes the expired entries ahead up to
  // that ticket, and `check_read` runs again. The last read's first three columns are the answer.
  std::string check;
  std::string check_read;

  // ---- release: gives back one level.
  // $1 resource, $2 kind, $3 ticket, $4 owner, $5 write (1: a write level, 0: a read level), and
  // $6 the wake-up channel where the dialect has one (PostgreSQL: NOTIFY with the resource when the
  // entry left or changed from writer to reader). Never below 0; the entry is deleted when both
  // counts reach 0. Expiry is not looked at: an entry that is still there is the owner's.
  // One statement when release_decrement is empty (PostgreSQL): returns one row (writes, reads,
  // …) of what is left (0, 0 when deleted), or no row when no such entry (with that level) exists.
  // Otherwise (MySQL, SQLite: no data-modifying CTEs): `release` ($1 … $5) gives back only a
  // *last* level — it deletes the entry when that level is all it has, and affects 1 row; when it
  // affects 0, release_decrement ($1 … $5) gives back the level of an entry that has more and
  // returns (writes, reads) of what is left — or, when release_reads_back (MySQL), affects 1 row
  // and release_readback ($1 … $4) returns them; nothing: no such entry (lost).
  std::string release;
  std::string release_decrement;
  bool release_reads_back = false;
  std::string release_readback;

  // $1 resource, $2 kind, $3 ticket, $4 owner, $5 channel (PostgreSQL): deletes the entry whatever
  // its counts (a waiter that gives up, an orphan found by the renewal). Returns one row when
  // deleted (PostgreSQL), or affects 1 row (MySQL, SQLite).
  std::string leave;

  // $1 holder session: extends every live auto-renew entry of the session to
  // GREATEST(expires_at, now + lease_ms) and returns (resource, owner, ticket, kind) of each — or,
  // when renew_reads_back, renew_readback reads them with the same parameter. An expired entry is
  // never renewed (only a check, the reaper or its owner's next enqueue removes it). The renewal
  // of a handle that also holds lock rows or permits is one statement on PostgreSQL: see
  // dialect/renewal_sql.hpp.
  std::string renew;
  bool renew_reads_back = false;
  std::string renew_readback;
};

// The queue statements for `kind` and the (validated, unquoted) lock table name. Cached: the same
// object for the same arguments.
std::shared_ptr<const queue_sql> queue_statements(dialect_kind kind, const std::string& table);

}  // namespace sqllock::detail
