-- sqllock schema 2 for PostgreSQL: the rows that row locks (SELECT … FOR UPDATE) lock.
--
-- One row per resource ever row-locked, holding only its name. Rows are inserted on first use
-- (INSERT … ON CONFLICT DO NOTHING) and never deleted: FOR UPDATE locks nothing when the row is
-- missing. Kept apart from the lock table, whose rows come and go with table locks and are
-- deleted by the reaper, so that the reaper never waits behind a row held FOR UPDATE.
-- Append-only history: never edit this file after release; add a new numbered file instead.

CREATE TABLE {{table_rows}} (
    -- The lock's name. COLLATE "C": byte-wise, like the lock table.
    resource text COLLATE "C" NOT NULL,
    CONSTRAINT {{table_rows_pkey}} PRIMARY KEY (resource),
    CONSTRAINT {{table_rows_check}} CHECK (octet_length(resource) BETWEEN 1 AND 255)
);
