// The SQL of count-down latches per dialect, with the table name filled in. Latches live in their
// own tables (migration 0004): `<table>_latches`, one row per latch name (count, the count it was
// armed with, generation, when it was created, armed and opened, an optional ttl deadline), and
// `<table>_latch_arrivals`, one row per (latch, generation, participant) that counted down with a
// participant id. Kept apart from dialect_sql, like row_lock_sql and permit_sql: latches share no
// rows with locks and hold no leases.
//
// Every time is the database's. An armed latch whose ttl ran out counts as absent in every
// statement here (it is neither counted down nor waited for, and arming replaces it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dialect/transaction_sql.hpp"
#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

struct latch_sql : transaction_sql {
  dialect_kind kind{};

  // ---- arming
  // $1 resource, $2 count, $3 ttl in ms (NULL: none). Inserts the latch (generation 1), or arms
  // again a latch that is open or whose ttl ran out (generation + 1; one whose ttl ran out also
  // gets a new created_at, since it is a new latch to its waiters). Returns (generation) when it
  // armed and nothing when an armed latch exists — unless reads_back.
  std::string arm;

  // MySQL: `arm` and `count_down` leave their answer in LAST_INSERT_ID(), report success as
  // affected rows > 0, and `read_back` (no parameters, same connection) → (that value).
  bool reads_back = false;
  std::string read_back;

  // ---- count-down without a participant
  // $1 resource, and $2 the wake-up channel where the dialect has one. Counts one down when the
  // latch is armed (count > 0, ttl not run out); at zero it sets opened_at and, on PostgreSQL,
  // notifies the channel with the name. Returns (count left) when it counted and nothing
  // otherwise — unless reads_back: affected 1, then read_back → (count left).
  std::string count_down;

  // ---- count-down with a participant: counts only when (latch, generation, participant) is new
  // One statement (participant_in_transaction false: PostgreSQL): count_down_participant ($1
  // resource, $2 participant, $3 channel) locks the latch row, inserts the arrival when armed and
  // decrements only if it inserted → no row when there is no latch; else (generation, count left,
  // counted 0/1, armed 0/1), with armed as it was before the statement.
  // Otherwise, one transaction: participant_isolation (exec_direct; may be empty), begin,
  // lock_latch ($1 → (count, generation, armed 0/1), the row locked until the transaction ends;
  // nothing when there is no latch), insert_arrival ($1, $2 generation, $3 participant → affected
  // 1 when new, 0 when that participant arrived already), decrement ($1, $2 generation), commit.
  // These dialects have no wake-up channel.
  bool participant_in_transaction = false;
  std::string count_down_participant;
  std::string participant_isolation;
  std::string lock_latch;
  std::string insert_arrival;
  std::string decrement;
  // $1 resource, $2 generation, $3 participant → a row when that participant arrived then.
  std::string arrived;

  // ---- state
  // $1 resource → nothing when there is no latch; else (count, initial count, generation,
  // instance, armed_at, opened_at, expires_in_ms, expired 0/1): instance is created_at as exact
  // text (equal only for the same latch), armed_at/opened_at UTC text 'YYYY-MM-DDTHH:MM:SS.mmmZ'
  // (opened_at NULL while armed), expires_in_ms the signed time left of an armed latch's ttl
  // (NULL without a ttl or once open), expired 1 for an armed latch whose ttl ran out.
  std::string find;
  // $1 resource, $2 generation → one participant per row, byte-wise ordered.
  std::string arrivals;

  // ---- reaper: latches opened at least $2 ms ago (the retention), and armed latches whose ttl
  // ran out at least $3 ms ago (the grace), at most $1 per batch, with all their arrivals.
  // One statement (reap_in_transaction false: PostgreSQL): reap_batch → one row per candidate it
  // locked (SKIP LOCKED), "1" when deleted, "0" when it was re-armed meanwhile.
  // Otherwise, one transaction: reap_isolation (exec_direct; may be empty), begin, reap_select
  // (same parameters → the candidates' resources, locked or under the one writer's lock),
  // reap_delete and reap_delete_arrivals (reap_delete_keys resources each, NULL-padded), commit.
  bool reap_in_transaction = false;
  std::string reap_batch;
  std::string reap_isolation;
  std::string reap_select;
  std::string reap_delete;
  std::string reap_delete_arrivals;
  std::size_t reap_delete_keys = 0;
  // Deletes at most $1 arrival rows of a generation that is no longer the latch's (it was armed
  // again, or the latch is gone) → rows (one per deleted arrival) or affected rows. Runs after
  // sweep_isolation (exec_direct; may be empty).
  std::string sweep_arrivals;
  std::string sweep_isolation;
};

// The latch statements for `kind` and the (validated, unquoted) lock table name. Cached: the same
// object for the same arguments.
std::shared_ptr<const latch_sql> latch_statements(dialect_kind kind, const std::string& table);

}  // namespace sqllock::detail
