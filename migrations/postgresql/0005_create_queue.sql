-- sqllock schema 5 for PostgreSQL: the wait queue of fair locks and read-write locks.
--
-- One row per (resource, kind, owner): an entry that waits for its turn or holds, a lease like a
-- lock row (owner, holder session, lease, expiry by the database clock), renewed and reaped like
-- one. kind 'F' is a fair lock's entry, 'R' a read-write lock's; the two never see each other.
-- An entry is a writer while write_count > 0, else a reader (read_count > 0); the counts are the
-- owner's re-entry levels. The ticket is drawn from the lock table's sequence, under a
-- transaction-scoped advisory lock on the name, so per name a lower ticket is committed before a
-- higher one is drawn: ticket order is arrival order, and grants follow it.
-- Append-only history: never edit this file after release; add a new numbered file instead.

CREATE TABLE {{table_queue}} (
    -- The lock's name. COLLATE "C": byte-wise, like the lock table.
    resource       text        COLLATE "C" NOT NULL,
    -- 'F' fair lock, 'R' read-write lock.
    kind           text        COLLATE "C" NOT NULL,
    -- The place in the queue, and the holder's fencing token.
    ticket         bigint      NOT NULL,
    -- The holding handle's random token plus thread (or an explicit owner key).
    owner_token    text        NOT NULL,
    holder_session text        NOT NULL,
    -- Write and read levels not yet released; a fair-lock entry has write levels only.
    write_count    bigint      NOT NULL,
    read_count     bigint      NOT NULL,
    holder_host    text        NOT NULL,
    holder_pid     bigint      NOT NULL,
    holder_thread  text        NOT NULL,
    lease_ms       bigint      NOT NULL,
    auto_renew     boolean     NOT NULL,
    enqueued_at    timestamptz NOT NULL,
    renewed_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    CONSTRAINT {{table_queue_pkey}} PRIMARY KEY (resource, kind, ticket),
    -- One entry per owner and lock.
    CONSTRAINT {{table_queue_owner}} UNIQUE (resource, kind, owner_token),
    CONSTRAINT {{table_queue_check}} CHECK (octet_length(resource) BETWEEN 1 AND 255
        AND kind IN ('F', 'R') AND write_count >= 0 AND read_count >= 0 AND write_count + read_count > 0
        AND (kind = 'R' OR read_count = 0) AND lease_ms > 0)
);

-- The reaper finds expired entries by this index.
CREATE INDEX {{table_queue_exp}} ON {{table_queue}} (expires_at);

-- The renewal statement extends every entry of one handle by this index.
CREATE INDEX {{table_queue_sess}} ON {{table_queue}} (holder_session);
