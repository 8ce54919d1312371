-- sqllock schema 3 for SQLite 3.35+: the permits of semaphores.
--
-- A semaphore of N permits has N slots, 0 … N-1. A row exists only while a slot is held: its
-- primary key (resource, slot) is what limits a name to N holders — nothing is ever counted.
-- Otherwise a row is a lease like a lock row, renewed, reaped and force-released like one.
-- Fences come from the lock table's high-water mark, so they increase per (resource, slot).
-- Append-only history: never edit this file after release; add a new numbered file instead.

CREATE TABLE {{table_permits}} (
    resource       TEXT    NOT NULL,
    slot           INTEGER NOT NULL,
    -- The N of the acquire that holds the slot (shown by status, so a mismatch is visible).
    permits        INTEGER NOT NULL,
    -- Unique per permit: the holding handle's random token plus a permit number.
    owner_token    TEXT    NOT NULL,
    holder_session TEXT    NOT NULL,
    fence          INTEGER NOT NULL,
    holder_host    TEXT    NOT NULL,
    holder_pid     INTEGER NOT NULL,
    holder_thread  TEXT    NOT NULL,
    lease_ms       INTEGER NOT NULL CHECK (lease_ms > 0),
    auto_renew     INTEGER NOT NULL,
    acquired_at    TEXT    NOT NULL,
    renewed_at     TEXT    NOT NULL,
    expires_at     TEXT    NOT NULL,
    PRIMARY KEY (resource, slot),
    CHECK (length(CAST(resource AS BLOB)) BETWEEN 1 AND 255 AND slot >= 0 AND slot < permits)
) WITHOUT ROWID;

CREATE INDEX {{table_permits_exp}} ON {{table_permits}} (expires_at);

CREATE INDEX {{table_permits_sess}} ON {{table_permits}} (holder_session);

DELIMITER //
CREATE TRIGGER {{table_permits_fhw_i}} AFTER INSERT ON {{table_permits}}
BEGIN
    UPDATE {{table_fence}} SET value = NEW.fence WHERE id = 1 AND value < NEW.fence;
END//

CREATE TRIGGER {{table_permits_fhw_u}} AFTER UPDATE OF fence ON {{table_permits}}
BEGIN
    UPDATE {{table_fence}} SET value = NEW.fence WHERE id = 1 AND value < NEW.fence;
END//
DELIMITER ;
