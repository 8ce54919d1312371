-- sqllock schema 5 for SQLite 3.35+: the wait queue of fair locks and read-write locks.
--
-- One row per (resource, kind, owner): an entry that waits for its turn or holds, a lease like a
-- lock row, renewed and reaped like one. kind 'F' is a fair lock's entry, 'R' a read-write
-- lock's; the two never see each other. An entry is a writer while write_count > 0, else a reader
-- (read_count > 0); the counts are the owner's re-entry levels. Tickets come from the lock
-- table's high-water mark (stored back by the triggers below); SQLite's single writer commits
-- them in the order they are drawn: ticket order is arrival order.
-- Append-only history: never edit this file after release; add a new numbered file instead.

CREATE TABLE {{table_queue}} (
    -- BINARY collation (the default): exact byte-wise names.
    resource       TEXT    NOT NULL,
    -- 'F' fair lock, 'R' read-write lock.
    kind           TEXT    NOT NULL,
    -- The place in the queue, and the holder's fencing token.
    ticket         INTEGER NOT NULL,
    owner_token    TEXT    NOT NULL,
    holder_session TEXT    NOT NULL,
    -- Write and read levels not yet released; a fair-lock entry has write levels only.
    write_count    INTEGER NOT NULL,
    read_count     INTEGER NOT NULL,
    holder_host    TEXT    NOT NULL,
    holder_pid     INTEGER NOT NULL,
    holder_thread  TEXT    NOT NULL,
    lease_ms       INTEGER NOT NULL CHECK (lease_ms > 0),
    auto_renew     INTEGER NOT NULL,
    -- UTC, 'YYYY-MM-DD HH:MM:SS.SSS' from SQLite's own clock; this format sorts as time does.
    enqueued_at    TEXT    NOT NULL,
    renewed_at     TEXT    NOT NULL,
    expires_at     TEXT    NOT NULL,
    PRIMARY KEY (resource, kind, ticket),
    -- One entry per owner and lock.
    UNIQUE (resource, kind, owner_token),
    CHECK (length(CAST(resource AS BLOB)) BETWEEN 1 AND 255 AND kind IN ('F', 'R')
        AND write_count >= 0 AND read_count >= 0 AND write_count + read_count > 0
        AND (kind = 'R' OR read_count = 0))
) WITHOUT ROWID;

CREATE INDEX {{table_queue_exp}} ON {{table_queue}} (expires_at);

CREATE INDEX {{table_queue_sess}} ON {{table_queue}} (holder_session);

DELIMITER //
CREATE TRIGGER {{table_queue_fhw_i}} AFTER INSERT ON {{table_queue}}
BEGIN
    UPDATE {{table_fence}} SET value = NEW.ticket WHERE id = 1 AND value < NEW.ticket;
END//

CREATE TRIGGER {{table_queue_fhw_u}} AFTER UPDATE OF ticket ON {{table_queue}}
BEGIN
    UPDATE {{table_fence}} SET value = NEW.ticket WHERE id = 1 AND value < NEW.ticket;
END//
DELIMITER ;
