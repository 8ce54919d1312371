-- sqllock schema 2 for MySQL 8 and MariaDB 10.6+: the rows that row locks (SELECT … FOR UPDATE)
-- lock.
--
-- One row per resource ever row-locked, holding only its name. Rows are inserted on first use and
-- never deleted: FOR UPDATE on a missing row takes a gap lock instead, which two sessions can
-- share and then deadlock on. Kept apart from the lock table, whose rows come and go with table
-- locks and are deleted by the reaper, so that the reaper never waits behind a row held FOR UPDATE.
-- Append-only history: never edit this file after release; add a new numbered file instead.
-- Idempotent, like every MySQL migration (DDL commits implicitly).

CREATE TABLE IF NOT EXISTS {{table_rows}} (
    -- VARBINARY: exact byte-wise names, like the lock table.
    resource VARBINARY(255) NOT NULL,
    PRIMARY KEY (resource),
    CONSTRAINT {{table_rows_check}} CHECK (LENGTH(resource) BETWEEN 1 AND 255)
) ENGINE=InnoDB;
