// PostgreSQL's renewal, in parts that the lock-row renewal (dialect_sql::renew) and the combined
// lock-and-permit renewal (permit_sql::renew_with_locks) share.
//
// One clock reading for every row: a MATERIALIZED CTE is evaluated once, where a FROM subquery
// may be rescanned (and clock_timestamp() read again) for each row the join meets. That reading
// comes before any wait for a row lock, and the row may meanwhile have been taken over by another
// owner of the same session, with a later expiry: GREATEST keeps a renewal from ever moving an
// expiry back (which would end the new holder's lease early).
//
// The session's rows are locked first, in key order (FOR UPDATE sits above the sort), and only
// then updated. An UPDATE alone locks them in the order it meets them (btree duplicates of one
// holder_session are ordered by heap position), and a renewal holding one row of a name set while
// waiting for another could deadlock with a multi-name acquire that takes them in name order.
#pragma once

#include <string_view>

namespace sqllock::detail {

// Opens the WITH clause: `t.now`, the statement's clock reading.
inline constexpr std::string_view kPgRenewClock = "WITH t AS MATERIALIZED (SELECT clock_timestamp() AS now), ";

// The lock rows of session $1: `l` returns (resource, owner_token, fence) of each lease renewed.
inline constexpr std::string_view kPgRenewLocks =
    "kl AS MATERIALIZED (SELECT resource FROM {{table}} "
    "WHERE holder_session = $1 AND auto_renew AND expires_at > (SELECT now FROM t) "
    "ORDER BY resource FOR UPDATE), "
    "l AS (UPDATE {{table}} AS x SET renewed_at = t.now, "
    "expires_at = GREATEST(x.expires_at, t.now + x.lease_ms * interval '1 millisecond') "
    "FROM t, kl WHERE x.resource = kl.resource "
    "AND x.holder_session = $1 AND x.auto_renew AND x.expires_at > t.now "
    "RETURNING x.resource, x.owner_token, x.fence)";

}  // namespace sqllock::detail
