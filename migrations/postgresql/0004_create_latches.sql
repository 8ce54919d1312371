-- sqllock schema 4 for PostgreSQL: count-down latches.
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
    -- The latch's name. COLLATE "C": byte-wise, like the lock table.
    resource      text        COLLATE "C" NOT NULL,
    -- Count-downs still needed; 0 once open.
    count         bigint      NOT NULL,
    -- The count the current generation was armed with.
    initial_count bigint      NOT NULL,
    -- 1 when the row is created, + 1 on every re-arming.
    generation    bigint      NOT NULL,
    created_at    timestamptz NOT NULL,
    armed_at      timestamptz NOT NULL,
    -- When count reached 0; NULL while armed.
    opened_at     timestamptz,
    -- An armed latch's explicit ttl deadline; NULL: no ttl.
    expires_at    timestamptz,
    CONSTRAINT {{table_latches_pkey}} PRIMARY KEY (resource),
    CONSTRAINT {{table_latches_check}} CHECK (octet_length(resource) BETWEEN 1 AND 255
        AND count >= 0 AND count <= initial_count AND initial_count >= 1 AND generation >= 1
        AND (count = 0) = (opened_at IS NOT NULL))
);

-- The reaper finds opened latches past their retention, and armed latches past their ttl, by these.
CREATE INDEX {{table_latch_opened}} ON {{table_latches}} (opened_at);

CREATE INDEX {{table_latch_expires}} ON {{table_latches}} (expires_at);

-- Who counted down in which generation of a latch.
CREATE TABLE {{table_latch_arrivals}} (
    resource    text        COLLATE "C" NOT NULL,
    generation  bigint      NOT NULL,
    -- The caller's participant id: 1-255 bytes, byte-wise.
    participant text        COLLATE "C" NOT NULL,
    arrived_at  timestamptz NOT NULL,
    CONSTRAINT {{table_latch_arr_pkey}} PRIMARY KEY (resource, generation, participant),
    CONSTRAINT {{table_latch_arr_chk}} CHECK (octet_length(participant) BETWEEN 1 AND 255)
);
