-- sqllock schema 4 for MySQL 8 and MariaDB 10.6+: count-down latches.
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
-- MySQL DDL commits implicitly, so every statement here is idempotent.

CREATE TABLE IF NOT EXISTS {{table_latches}} (
    -- VARBINARY: exact byte-wise names, like the lock table.
    resource      VARBINARY(255) NOT NULL,
    -- Count-downs still needed; 0 once open.
    count         BIGINT         NOT NULL,
    -- The count the current generation was armed with.
    initial_count BIGINT         NOT NULL,
    -- 1 when the row is created, + 1 on every re-arming.
    generation    BIGINT         NOT NULL,
    -- UTC wall time from the server's clock (UTC_TIMESTAMP(6)), independent of time_zone.
    created_at    DATETIME(6)    NOT NULL,
    armed_at      DATETIME(6)    NOT NULL,
    -- When count reached 0; NULL while armed.
    opened_at     DATETIME(6)    NULL,
    -- An armed latch's explicit ttl deadline; NULL: no ttl.
    expires_at    DATETIME(6)    NULL,
    PRIMARY KEY (resource),
    -- The reaper finds opened latches past their retention, and armed latches past their ttl.
    KEY {{table_latch_opened}} (opened_at),
    KEY {{table_latch_expires}} (expires_at),
    CONSTRAINT {{table_latches_check}} CHECK (LENGTH(resource) BETWEEN 1 AND 255
        AND count >= 0 AND count <= initial_count AND initial_count >= 1 AND generation >= 1
        AND (count = 0) = (opened_at IS NOT NULL))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Who counted down in which generation of a latch.
CREATE TABLE IF NOT EXISTS {{table_latch_arrivals}} (
    resource    VARBINARY(255) NOT NULL,
    generation  BIGINT         NOT NULL,
    -- The caller's participant id: 1-255 bytes, byte-wise.
    participant VARBINARY(255) NOT NULL,
    arrived_at  DATETIME(6)    NOT NULL,
    PRIMARY KEY (resource, generation, participant),
    CONSTRAINT {{table_latch_arr_chk}} CHECK (LENGTH(participant) BETWEEN 1 AND 255)
) ENGINE=InnoDB;
