// Runs the wait queue's statements (dialect/queue_sql.hpp) and reads their results: the only place
// where the core touches queue SQL results, as table_store is for lock rows.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "core/lease/table_store.hpp"
#include "dialect/queue_sql.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

// The two kinds of entry: a fair lock's (always a writer) and a read-write lock's.
enum class queue_kind : char { fair = 'F', rw = 'R' };

struct queue_request {
  std::string resource;
  queue_kind kind;
  std::string owner;
  std::string session;
  std::chrono::milliseconds lease;
  bool auto_renew;
  bool write;  // a write (exclusive) level, else a read level
};

// An entry as the statement left it.
struct queue_entry {
  std::int64_t ticket = 0;
  std::int64_t writes = 0;
  std::int64_t reads = 0;
  std::int64_t levels() const noexcept { return writes + reads; }
};

// What a check found.
struct queue_turn {
  bool mine = false;                              // the entry exists and is live
  std::int64_t blockers = 0;                      // live entries ahead that block it
  std::optional<std::chrono::milliseconds> wait;  // until the first blocker's lease runs out
  bool holds() const noexcept { return mine && blockers == 0; }
};

// Statements on one connection. Every function throws outcome_unknown when the connection broke
// after the statement may have been applied, backend_error / schema_error otherwise.
class queue_store {
 public:
  queue_store(connection& conn, const queue_sql& sql, std::string wakeup_channel)
      : conn_(conn), sql_(sql), channel_(std::move(wakeup_channel)) {}

  // Takes a place, or adds a level to the owner's live entry (dialect/queue_sql.hpp enqueue): a
  // write level asked of a reader entry changes nothing (writes stays 0). Nullopt when the entry
  // was deleted before it could be read back (MySQL: a release by force between the upsert and
  // its read-back): the place is lost as if at a check, and the caller queues again at the back.
  std::optional<queue_entry> enqueue(const queue_request& r);

  // Whether the entry is at its turn; deletes expired entries ahead of it first.
  queue_turn check(const std::string& resource, queue_kind kind, std::int64_t ticket, const std::string& owner);

  // Gives back one level; what is left (0/0: the entry left the queue), or nullopt when the entry
  // is gone (its lease ran out and it was deleted, or it was released by force).
  std::optional<queue_entry> release(const std::string& resource, queue_kind kind, std::int64_t ticket,
                                     const std::string& owner, bool write);

  // Deletes the entry whatever its levels. False when it was not there.
  bool leave(const std::string& resource, queue_kind kind, std::int64_t ticket, const std::string& owner);

 private:
  result run(const std::string& sql, std::span<const value> params);

  connection& conn_;
  const queue_sql& sql_;
  const std::string channel_;
};

// The store of the wait queue's entries of `kind`: rows of lease_table::queue, tagged
// by their kind ('F', 'R').
const lease_store& queue_entries_store(queue_kind kind);

}  // namespace sqllock::detail
