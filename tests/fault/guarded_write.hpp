// The guarded write of a fault run's sections (issue 25's workload): what an application does
// with sqllock's guard. At the section's start a holder of a leased kind takes its hold's claim
// (lease_claim) and reads the guarded counter g with u; at the section's end — after its hold
// time, through which the nemesis may have paused it past its lease, cut its lock connections or
// killed it — it sets g = read + 1 in one transaction of an application connection of its own,
// through the adapter of its database (libpqxx on PostgreSQL, Connector/C++ on MariaDB, SOCI on
// SQLite), with guard(tx, claim) as the transaction's first statement. The connection goes where
// the worker's locks go (the server, PgBouncer, the pg_auto_failover pair, a Galera node) but not
// through the network faults' proxy, as an application's own pool would.
//
// The claim is taken at the start, not just before the write, so that the guard statement in
// the database is all that stands between a stale holder and its write: claim() itself refuses a
// hold whose loss was told or whose local deadline passed.
//
// The history's W line records the outcome: ok (committed), lost (the guard threw lock_lost and
// the transaction was rolled back), rej (another error before the commit: rolled back), unk (the
// commit's outcome was not seen), with the monotonic times just before the commit was sent and
// before the transaction began.
// Checked by fault/guard_check.hpp. The unguarded-write control runs the same transactions
// without the guard statement.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sqllock/dialect_kind.hpp"
#include "sqllock/error.hpp"
#include "sqllock/lease_claim.hpp"

namespace sqllock::test {
class app_session;
}

namespace sqllock::fault {

struct guarded_outcome {
  const char* result = "rej";  // ok, lost, rej, unk
  std::int64_t attempted = 0;  // CLOCK_MONOTONIC just before the transaction began
  std::int64_t sent = 0;       // … just before the commit was sent; 0 when it was not
  // The W line's fields: result, sent, attempted.
  std::vector<std::string> history_fields() const { return {result, std::to_string(sent), std::to_string(attempted)}; }
};

// The claim `take` returns (a section's or a set's claim()), taken at the section's start; nullopt
// when the hold has none, or when claim() throws because the holder was told of a loss already
// (then the section makes no guarded write).
template <class Take>
std::optional<lease_claim> claim_at_start(Take take) {
  try {
    return take();
  } catch (const error&) {
    return std::nullopt;
  }
}

// One worker thread's application connection (made on first use, made again after it broke).
class guarded_writer {
 public:
  // `uri`: the database's sqllock URI; `guard`: false for the unguarded-write control.
  guarded_writer(std::string uri, dialect_kind dialect, bool guard);
  ~guarded_writer();
  guarded_writer(const guarded_writer&) = delete;
  guarded_writer& operator=(const guarded_writer&) = delete;

  // Sets g = value for each (key, value) of `counters` in one transaction guarded by `claim`.
  // Never throws.
  guarded_outcome write(const lease_claim& claim, const std::vector<std::pair<std::string, std::int64_t>>& counters);

 private:
  std::string uri_;
  dialect_kind dialect_;
  bool guard_;
  std::unique_ptr<test::app_session> app_;
};

}  // namespace sqllock::fault
