-- sqllock schema 4 for SQLite 3.35+: count-down latches.
--
-- One row per latch name. A latch is armed with a count N (count = initial_count = N, opened_at
-- NULL) and opens when count-downs bring count to 0 (opened_at set, by the database clock). An
-- opened latch may be armed again, as the next generation of the same latch; an armed latch whose
-- explicit ttl ran out (expires_at) counts as absent and may be armed anew. created_at names the
-- latch as a whole: it changes only when the row is created or an expired latch is replaced, so
-- a waiter can tell "my generation opened and the latch was re-armed" from "my latch is gone".
-- Count-downs with a participant id record one arrival row per (latch, generation, participant),
-- so a retried count-down counts once.
-- Append-only history: never edit this file after release; add a new numbered file instead.

CREATE TABLE {{table_latches}} (
    -- BINARY collation (the default): exact byte-wise names.
    resource      TEXT    NOT NULL PRIMARY KEY,
    -- Count-downs still needed; 0 once open.
    count         INTEGER NOT NULL,
    -- The count the current generation was armed with.
    initial_count INTEGER NOT NULL,
    -- 1 when the row is created, + 1 on every re-arming.
    generation    INTEGER NOT NULL,
    -- UTC, 'YYYY-MM-DD HH:MM:SS.SSS' from SQLite's own clock; this format sorts as time does.
    created_at    TEXT    NOT NULL,
    armed_at      TEXT    NOT NULL,
    -- When count reached 0; NULL while armed.
    opened_at     TEXT,
    -- An armed latch's explicit ttl deadline; NULL: no ttl.
    expires_at    TEXT,
    CHECK (length(CAST(resource AS BLOB)) BETWEEN 1 AND 255
        AND count >= 0 AND count <= initial_count AND initial_count >= 1 AND generation >= 1
        AND (count = 0) = (opened_at IS NOT NULL))
) WITHOUT ROWID;

-- The reaper finds opened latches past their retention, and armed latches past their ttl, by these.
CREATE INDEX {{table_latch_opened}} ON {{table_latches}} (opened_at);

CREATE INDEX {{table_latch_expires}} ON {{table_latches}} (expires_at);

-- Who counted down in which generation of a latch.
CREATE TABLE {{table_latch_arrivals}} (
    resource    TEXT    NOT NULL,
    generation  INTEGER NOT NULL,
    -- The caller's participant id: 1-255 bytes, byte-wise.
    participant TEXT    NOT NULL,
    arrived_at  TEXT    NOT NULL,
    PRIMARY KEY (resource, generation, participant),
    CHECK (length(CAST(participant AS BLOB)) BETWEEN 1 AND 255)
) WITHOUT ROWID;
