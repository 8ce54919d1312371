-- sqllock schema 1 for MySQL 8 and MariaDB 10.6+: the lock table and its fencing-token counter.
--
-- {{table}} and {{table_<suffix>}} are replaced by the quoted configured table name (and that
-- name + "_<suffix>") when the migration runs. This file is append-only history: never edit it
-- after release; add a new numbered file instead (sqllock refuses a changed checksum).
-- MySQL DDL commits implicitly, so every statement here is idempotent: a migration interrupted
-- half-way completes when it is run again.

-- MySQL 8 has no sequences, so fencing tokens come from this one-row counter, advanced by the
-- trigger below. InnoDB persists it, so tokens keep increasing across row deletions and restarts.
CREATE TABLE IF NOT EXISTS {{table_fence}} (
    id    TINYINT NOT NULL PRIMARY KEY,
    value BIGINT  NOT NULL
) ENGINE=InnoDB;

INSERT IGNORE INTO {{table_fence}} (id, value) VALUES (1, 0);

CREATE TABLE IF NOT EXISTS {{table}} (
    -- VARBINARY: exact byte-wise names. A _bin collation would still pad trailing spaces
    -- ('a' = 'a '), which would make two names one lock.
    resource       VARBINARY(255) NOT NULL,
    owner_token    VARBINARY(255) NOT NULL,
    holder_session VARBINARY(64)  NOT NULL,
    count          BIGINT         NOT NULL,
    fence          BIGINT         NOT NULL,
    holder_host    VARCHAR(255)   NOT NULL,
    holder_pid     BIGINT         NOT NULL,
    holder_thread  VARCHAR(64)    NOT NULL,
    lease_ms       BIGINT         NOT NULL,
    auto_renew     BOOLEAN        NOT NULL,
    -- UTC wall time from the server's clock (UTC_TIMESTAMP(6)), independent of time_zone.
    acquired_at    DATETIME(6)    NOT NULL,
    renewed_at     DATETIME(6)    NOT NULL,
    expires_at     DATETIME(6)    NOT NULL,
    PRIMARY KEY (resource),
    KEY {{table_expires_idx}} (expires_at),
    KEY {{table_session_idx}} (holder_session),
    CONSTRAINT {{table_resource_check}} CHECK (LENGTH(resource) BETWEEN 1 AND 255),
    CONSTRAINT {{table_count_check}} CHECK (count >= 1),
    CONSTRAINT {{table_lease_check}} CHECK (lease_ms > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every insert attempt draws the next token; an acquire that takes over an expired row copies
-- it with VALUES(fence). Statements separated by a custom DELIMITER, as for the mysql client.
DROP TRIGGER IF EXISTS {{table_fence_next}};

DELIMITER //
CREATE TRIGGER {{table_fence_next}} BEFORE INSERT ON {{table}} FOR EACH ROW
BEGIN
    UPDATE {{table_fence}} SET value = LAST_INSERT_ID(value + 1) WHERE id = 1;
    SET NEW.fence = LAST_INSERT_ID();
END//
DELIMITER ;
