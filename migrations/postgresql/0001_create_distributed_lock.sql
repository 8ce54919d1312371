-- sqllock schema 1 for PostgreSQL: the lock table and the sequence its fencing tokens come from.
--
-- {{table}} and {{table_<suffix>}} are replaced by the quoted configured table name (and that
-- name + "_<suffix>") when the migration runs. This file is append-only history: never edit it
-- after release; add a new numbered file instead (sqllock refuses a changed checksum).

-- Fencing tokens come from one sequence, so they increase across releases, take-overs, row
-- deletions and server restarts (a sequence never goes backwards; after a crash it may skip).
CREATE SEQUENCE {{table_fence_seq}} AS bigint MINVALUE 1 NO CYCLE;

CREATE TABLE {{table}} (
    -- The lock's name. COLLATE "C": byte-wise, so 'A' and 'a' are different locks.
    resource       text        COLLATE "C" NOT NULL,
    -- Who holds it: the holding handle's random token plus thread (or an explicit owner key).
    owner_token    text        NOT NULL,
    -- The database handle whose watchdog renews this lease.
    holder_session text        NOT NULL,
    -- Reentrancy depth: acquisitions by the owner not yet released.
    count          bigint      NOT NULL,
    fence          bigint      NOT NULL,
    holder_host    text        NOT NULL,
    holder_pid     bigint      NOT NULL,
    holder_thread  text        NOT NULL,
    -- Lease length; renewal extends expires_at to now + lease_ms when auto_renew is on.
    lease_ms       bigint      NOT NULL,
    auto_renew     boolean     NOT NULL,
    acquired_at    timestamptz NOT NULL,
    renewed_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    CONSTRAINT {{table_pkey}} PRIMARY KEY (resource),
    CONSTRAINT {{table_resource_check}} CHECK (octet_length(resource) BETWEEN 1 AND 255),
    CONSTRAINT {{table_count_check}} CHECK (count >= 1),
    CONSTRAINT {{table_lease_check}} CHECK (lease_ms > 0)
);

-- The reaper finds expired rows by this index.
CREATE INDEX {{table_expires_idx}} ON {{table}} (expires_at);

-- The renewal watchdog extends every lease of one handle in one statement by this index.
CREATE INDEX {{table_session_idx}} ON {{table}} (holder_session);
