-- sqllock schema 5 for MySQL 8 and MariaDB 10.6+: the wait queue of fair locks and read-write locks.
--
-- One row per (resource, kind, owner): an entry that waits for its turn or holds, a lease like a
-- lock row, renewed and reaped like one. kind 'F' is a fair lock's entry, 'R' a read-write
-- lock's; the two never see each other. An entry is a writer while write_count > 0, else a reader
-- (read_count > 0); the counts are the owner's re-entry levels. The ticket is drawn from the lock
-- table's counter row by the trigger below, whose row lock lasts until the enqueue commits, so a
-- lower ticket is always committed before a higher one is drawn: ticket order is arrival order.
-- Append-only history: never edit this file after release; add a new numbered file instead.
-- MySQL DDL commits implicitly, so every statement here is idempotent.

CREATE TABLE IF NOT EXISTS {{table_queue}} (
    -- VARBINARY: exact byte-wise names, like the lock table.
    resource       VARBINARY(255) NOT NULL,
    -- 'F' fair lock, 'R' read-write lock.
    kind           CHAR(1) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    -- The place in the queue, and the holder's fencing token.
    ticket         BIGINT         NOT NULL,
    owner_token    VARBINARY(255) NOT NULL,
    holder_session VARBINARY(64)  NOT NULL,
    -- Write and read levels not yet released (READS is a reserved word, hence the suffix).
    write_count    BIGINT         NOT NULL,
    read_count     BIGINT         NOT NULL,
    holder_host    VARCHAR(255)   NOT NULL,
    holder_pid     BIGINT         NOT NULL,
    holder_thread  VARCHAR(64)    NOT NULL,
    lease_ms       BIGINT         NOT NULL,
    auto_renew     BOOLEAN        NOT NULL,
    -- UTC wall time from the server's clock (UTC_TIMESTAMP(6)), independent of time_zone.
    enqueued_at    DATETIME(6)    NOT NULL,
    renewed_at     DATETIME(6)    NOT NULL,
    expires_at     DATETIME(6)    NOT NULL,
    PRIMARY KEY (resource, kind, ticket),
    -- One entry per owner and lock.
    UNIQUE KEY {{table_queue_owner}} (resource, kind, owner_token),
    KEY {{table_queue_exp}} (expires_at),
    KEY {{table_queue_sess}} (holder_session),
    CONSTRAINT {{table_queue_check}} CHECK (LENGTH(resource) BETWEEN 1 AND 255
        AND kind IN ('F', 'R') AND write_count >= 0 AND read_count >= 0 AND write_count + read_count > 0
        AND (kind = 'R' OR read_count = 0) AND lease_ms > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every insert attempt draws the next ticket from the lock table's counter, as lock rows draw
-- their fences; an enqueue that replaces its owner's expired entry copies it with VALUES(ticket).
DROP TRIGGER IF EXISTS {{table_queue_ticket}};

DELIMITER //
CREATE TRIGGER {{table_queue_ticket}} BEFORE INSERT ON {{table_queue}} FOR EACH ROW
BEGIN
    UPDATE {{table_fence}} SET value = LAST_INSERT_ID(value + 1) WHERE id = 1;
    SET NEW.ticket = LAST_INSERT_ID();
END//
DELIMITER ;
