-- sqllock schema 3 for PostgreSQL: the permits of semaphores.
--
-- A semaphore of N permits has N slots, 0 … N-1. A row exists only while a slot is held: its
-- primary key (resource, slot) is what limits a name to N holders — nothing is ever counted.
-- Otherwise a row is a lease like a lock row (owner, holder session, fence, lease, expiry by the
-- database clock), renewed, reaped and force-released like one. Fences come from the lock table's
-- sequence, so they increase per (resource, slot) in grant order.
-- Append-only history: never edit this file after release; add a new numbered file instead.

CREATE TABLE {{table_permits}} (
    -- The semaphore's name. COLLATE "C": byte-wise, like the lock table.
    resource       text        COLLATE "C" NOT NULL,
    slot           integer     NOT NULL,
    -- The N of the acquire that holds the slot (shown by status, so a mismatch is visible).
    permits        integer     NOT NULL,
    -- Unique per permit: the holding handle's random token plus a permit number.
    owner_token    text        NOT NULL,
    holder_session text        NOT NULL,
    fence          bigint      NOT NULL,
    holder_host    text        NOT NULL,
    holder_pid     bigint      NOT NULL,
    holder_thread  text        NOT NULL,
    lease_ms       bigint      NOT NULL,
    auto_renew     boolean     NOT NULL,
    acquired_at    timestamptz NOT NULL,
    renewed_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    CONSTRAINT {{table_permits_pkey}} PRIMARY KEY (resource, slot),
    CONSTRAINT {{table_permits_check}} CHECK (octet_length(resource) BETWEEN 1 AND 255
        AND slot >= 0 AND slot < permits AND lease_ms > 0)
);

-- The reaper finds expired permits by this index.
CREATE INDEX {{table_permits_exp}} ON {{table_permits}} (expires_at);

-- The renewal statement extends every permit of one handle by this index.
CREATE INDEX {{table_permits_sess}} ON {{table_permits}} (holder_session);
