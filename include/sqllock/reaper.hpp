// sqllock/reaper.hpp — deleting lock rows, semaphore permits and wait-queue entries whose lease
// ran out.
//
// A holder that dies leaves its row behind until another acquire of the same name takes it over
// (or, in the wait queue of a fair or read-write lock, until an entry behind it checks its turn).
// Names that are never used again would stay forever; reap() deletes them. It is safe to run at
// any time, from any number of processes at once (cron, a daemon, `sqllock reap`): it deletes
// only rows whose lease expired by the database's clock, and never waits for a row another
// transaction holds. The `sqllock-reaper` program runs it once (for cron) or periodically.
//
//   sqllock::database db("postgresql://ops@db/app");
//   std::uint64_t gone = sqllock::reap(db, {.grace = std::chrono::minutes(5)});
#pragma once

#include "sqllock/export.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stop_token>

#include "sqllock/database.hpp"

namespace sqllock {

// Largest batch reap() accepts.
inline constexpr std::size_t max_reap_batch = 100000;
// The former name of max_reap_batch.
[[deprecated("use sqllock::max_reap_batch")]] inline constexpr std::size_t kMaxReapBatch = max_reap_batch;

struct reap_options {
  // Rows deleted per statement (per short transaction on MySQL), 1 to max_reap_batch. Bounds how
  // long one statement runs and how many row locks it holds.
  std::size_t batch_size = 1000;

  // Only rows whose lease ended at least this long ago are deleted (0 to 365 days). A grace
  // keeps expired rows visible to `sqllock status` for a while, e.g. to see who crashed.
  std::chrono::milliseconds grace{0};

  // Checked between batches: once stop is requested, reap() returns what it deleted so far.
  std::stop_token stop{};

  // Called on the calling thread after each batch has committed, with the rows it deleted (0 for
  // the last, short batch of the lock rows when it found nothing more; a batch of permits, queue
  // entries or latches is reported only when it deleted some). Those rows stay deleted even if a
  // later batch throws, so a caller that counts here (the sqllock-reaper daemon's metrics) knows
  // what a failed pass did. May be empty. An exception it throws ends reap() with that exception.
  std::function<void(std::uint64_t deleted)> on_batch{};

  // Count-down latches (sqllock/latch.hpp): an open latch is deleted once it opened at least this
  // long ago (0 to 365 days; default one day), so that late waiters still find it open rather than
  // absent. Armed latches whose ttl ran out at least `grace` ago are deleted too (their waiters
  // see absent, never open). Latch batches that delete latches are reported to on_batch as well.
  std::chrono::milliseconds latch_retention = std::chrono::hours(24);
};

// Deletes every row of db.table(), of its permits table (semaphores) and of its wait queue (fair
// and read-write locks, holding or waiting) whose lease ended at least options.grace ago
// (expires_at <= database now − grace; the same test acquire uses to take a row over), in batches,
// table by table, until a batch finds fewer rows than batch_size. Rows locked by another
// transaction at that moment (FOR UPDATE SKIP LOCKED on PostgreSQL, MySQL 8 and MariaDB 10.6+) are
// skipped for this pass, never waited for; SQLite, which has one writer at a time, waits for the
// writer up to its busy timeout. Each row's expiry is checked again as it is deleted, so a lease
// renewed concurrently survives. Never touches the fencing-token sequence or counter, so tokens
// keep increasing. Then deletes latches as options.latch_retention says, with their arrivals, the
// same way. Returns the number of lock rows, permits, queue entries and latches deleted.
// Thread-safe; any number of reapers may run at once, and each expired row is deleted by exactly
// one of them.
// Throws invalid_argument for a batch_size, grace or latch_retention out of range, schema_error
// when the lock table (or a later one, such as the queue's or the latches') is missing,
// connection_error / backend_error when the database fails (rows deleted by earlier batches stay
// deleted, and were reported to options.on_batch).
SQLLOCK_API std::uint64_t reap(const database& db, const reap_options& options = {});

}  // namespace sqllock
