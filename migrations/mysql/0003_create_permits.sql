-- sqllock schema 3 for MySQL 8 and MariaDB 10.6+: the permits of semaphores.
--
-- A semaphore of N permits has N slots, 0 … N-1. A row exists only while a slot is held: its
-- primary key (resource, slot) is what limits a name to N holders — nothing is ever counted.
-- Otherwise a row is a lease like a lock row, renewed, reaped and force-released like one.
-- Fences come from the lock table's counter row, so they increase per (resource, slot).
-- Append-only history: never edit this file after release; add a new numbered file instead.
-- MySQL DDL commits implicitly, so every statement here is idempotent.

CREATE TABLE IF NOT EXISTS {{table_permits}} (
    resource       VARBINARY(255) NOT NULL,
    slot           INT            NOT NULL,
    -- The N of the acquire that holds the slot (shown by status, so a mismatch is visible).
    permits        INT            NOT NULL,
    -- Unique per permit: the holding handle's random token plus a permit number.
    owner_token    VARBINARY(255) NOT NULL,
    holder_session VARBINARY(64)  NOT NULL,
    fence          BIGINT         NOT NULL,
    holder_host    VARCHAR(255)   NOT NULL,
    holder_pid     BIGINT         NOT NULL,
    holder_thread  VARCHAR(64)    NOT NULL,
    lease_ms       BIGINT         NOT NULL,
    auto_renew     BOOLEAN        NOT NULL,
    acquired_at    DATETIME(6)    NOT NULL,
    renewed_at     DATETIME(6)    NOT NULL,
    expires_at     DATETIME(6)    NOT NULL,
    PRIMARY KEY (resource, slot),
    KEY {{table_permits_exp}} (expires_at),
    KEY {{table_permits_sess}} (holder_session),
    CONSTRAINT {{table_permits_check}} CHECK (LENGTH(resource) BETWEEN 1 AND 255
        AND slot >= 0 AND slot < permits AND lease_ms > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every insert attempt draws the next token from the lock table's counter, as lock rows do.
DROP TRIGGER IF EXISTS {{table_permits_fence}};

DELIMITER //
CREATE TRIGGER {{table_permits_fence}} BEFORE INSERT ON {{table_permits}} FOR EACH ROW
BEGIN
    UPDATE {{table_fence}} SET value = LAST_INSERT_ID(value + 1) WHERE id = 1;
    SET NEW.fence = LAST_INSERT_ID();
END//
DELIMITER ;
