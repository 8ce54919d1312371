-- sqllock schema 1 for SQLite 3.35+: the lock table and its fencing-token high-water mark.
--
-- {{table}} and {{table_<suffix>}} are replaced by the quoted configured table name (and that
-- name + "_<suffix>") when the migration runs. This file is append-only history: never edit it
-- after release; add a new numbered file instead (sqllock refuses a changed checksum).

-- The highest fencing token ever issued. An acquire draws value + 1; the triggers below store
-- it back in the same statement. SQLite runs one writer at a time, so the two cannot interleave.
CREATE TABLE {{table_fence}} (
    id    INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
);

INSERT INTO {{table_fence}} (id, value) VALUES (1, 0);

CREATE TABLE {{table}} (
    -- BINARY collation (the default): exact byte-wise names.
    resource       TEXT    NOT NULL PRIMARY KEY,
    owner_token    TEXT    NOT NULL,
    holder_session TEXT    NOT NULL,
    count          INTEGER NOT NULL CHECK (count >= 1),
    fence          INTEGER NOT NULL,
    holder_host    TEXT    NOT NULL,
    holder_pid     INTEGER NOT NULL,
    holder_thread  TEXT    NOT NULL,
    lease_ms       INTEGER NOT NULL CHECK (lease_ms > 0),
    auto_renew     INTEGER NOT NULL,
    -- UTC, 'YYYY-MM-DD HH:MM:SS.SSS' from SQLite's own clock; this format sorts as time does.
    acquired_at    TEXT    NOT NULL,
    renewed_at     TEXT    NOT NULL,
    expires_at     TEXT    NOT NULL,
    CHECK (length(CAST(resource AS BLOB)) BETWEEN 1 AND 255)
) WITHOUT ROWID;

CREATE INDEX {{table_expires_idx}} ON {{table}} (expires_at);

CREATE INDEX {{table_session_idx}} ON {{table}} (holder_session);

DELIMITER //
CREATE TRIGGER {{table_fence_on_insert}} AFTER INSERT ON {{table}}
BEGIN
    UPDATE {{table_fence}} SET value = NEW.fence WHERE id = 1 AND value < NEW.fence;
END//

CREATE TRIGGER {{table_fence_on_update}} AFTER UPDATE OF fence ON {{table}}
BEGIN
    UPDATE {{table_fence}} SET value = NEW.fence WHERE id = 1 AND value < NEW.fence;
END//
DELIMITER ;
