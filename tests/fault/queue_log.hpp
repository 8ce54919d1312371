// The server's log of the wait queue (fair and rw runs): triggers on sqllock's queue table
// (`distributed_lock_queue`, schema 5) keep one row per place — per (resource, kind, ticket) — in
// fault_queue_log, test-only (the library never sees them):
//   an INSERT, or an UPDATE that changes the ticket (an enqueue that replaces its owner's expired
//   place), starts a place: its owner token, holder pid, mode (writer: write_count > 0), lease,
//   enqueued_at and expires_at as written, and logged_at, when the trigger ran;
//   an UPDATE that keeps the ticket (renewal, a level more or less) moves its expiry to the
//   latest expires_at, and records when a writer became a reader (its last write level released
//   while it still reads);
//   a DELETE (release, leave, a check deleting it as expired, the reaper) ends it (end event D),
//   as does the UPDATE that gives its owner a new ticket (R).
// Rows of a rolled-back transaction vanish with it, so the log holds exactly what committed.
// Times on the database clock, µs since 1970 (trigger_now: MariaDB's real time, not the
// statement's start).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::fault {

struct queue_log_row {
  std::string resource;
  char kind = '?';  // F fair lock, R read-write lock
  std::int64_t ticket = 0;
  std::string owner;
  std::int64_t pid = 0;  // holder_pid: the process that took the place
  bool writer = false;   // write_count > 0 when the place was taken
  std::int64_t lease_ms = 0;
  std::int64_t enqueued_us = 0;           // the enqueue's clock reading
  std::int64_t expires_us = 0;            // the latest expiry any renewal set
  std::optional<std::int64_t> reader_us;  // a writer that became a reader: when
  std::optional<std::int64_t> ended_us;   // deleted or replaced: when
  char end_event = '-';                   // D deleted, R replaced by a new ticket, - not ended
  std::int64_t logged_us = 0;             // when the trigger that started it ran
  // The place is gone from here on: deleted or replaced, or past its lease.
  std::int64_t end_us() const { return ended_us ? std::min(*ended_us, expires_us) : expires_us; }
  // Whether the place blocks a writer (every place) or a reader (a writer's place) at `at_us`.
  bool blocks(bool writer_waiting, std::int64_t at_us) const {
    return writer_waiting || (writer && (!reader_us || *reader_us > at_us));
  }
};

// Creates fault_queue_log and its triggers on the queue table (after migrate()).
void create_queue_log(const database& db);

// Every place in the log, by resource, kind and ticket.
std::vector<queue_log_row> read_queue_log(const database& db);

}  // namespace sqllock::fault
