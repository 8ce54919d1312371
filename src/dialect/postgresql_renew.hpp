// PostgreSQL's renewal, in parts: one per table a handle holds leases in (lock rows, permits, wait
// queue entries). Each table's own renewal (dialect_sql::renew, permit_sql::renew,
// queue_sql::renew) is the clock and its part; a handle with leases in several tables renews them
// all in one statement of the clock and their parts (dialect/renewal_sql.hpp).
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

// The permits of session $1: `p` returns (resource, owner_token, fence) of each lease renewed.
inline constexpr std::string_view kPgRenewPermits =
    "kp AS MATERIALIZED (SELECT resource, slot FROM {{table_permits}} "
    "WHERE holder_session = $1 AND auto_renew AND expires_at > (SELECT now FROM t) "
    "ORDER BY resource, slot FOR UPDATE), "
    "p AS (UPDATE {{table_permits}} AS x SET renewed_at = t.now, "
    "expires_at = GREATEST(x.expires_at, t.now + x.lease_ms * interval '1 millisecond') "
    "FROM t, kp WHERE x.resource = kp.resource AND x.slot = kp.slot "
    "AND x.holder_session = $1 AND x.auto_renew AND x.expires_at > t.now "
    "RETURNING x.resource, x.owner_token, x.fence)";

// The wait-queue entries of session $1, waiting or holding: `q` returns (resource, owner_token,
// ticket, kind) of each lease renewed.
inline constexpr std::string_view kPgRenewQueue =
    "kq AS MATERIALIZED (SELECT resource, kind, ticket FROM {{table_queue}} "
    "WHERE holder_session = $1 AND auto_renew AND expires_at > (SELECT now FROM t) "
    "ORDER BY resource, kind, ticket FOR UPDATE), "
    "q AS (UPDATE {{table_queue}} AS x SET renewed_at = t.now, "
    "expires_at = GREATEST(x.expires_at, t.now + x.lease_ms * interval '1 millisecond') "
    "FROM t, kq WHERE x.resource = kq.resource AND x.kind = kq.kind AND x.ticket = kq.ticket "
    "AND x.holder_session = $1 AND x.auto_renew AND x.expires_at > t.now "
    "RETURNING x.resource, x.owner_token, x.ticket, x.kind)";

}  // namespace sqllock::detail
