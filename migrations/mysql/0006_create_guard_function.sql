-- sqllock schema 6 for MySQL 8 and MariaDB 10.6+: the SQL guard, a function any client can call
-- in its own transaction to make its writes conditional on a lock it holds (docs/design.md,
-- "Guarded writes").
--
--   START TRANSACTION;
--   SELECT distributed_lock_guard('invoice:42', 1234);   -- the lock's name and its fencing token
--   UPDATE invoices SET status = 'paid' WHERE id = 42;
--   COMMIT;
--
-- {{table_guard}}(lock_name, lock_fence) finds the lease row that has this name and fence — a lock
-- row, a semaphore permit or a fair/read-write lock's queue entry: every fence and ticket comes
-- from the one counter, so the pair names one row — unexpired by UTC_TIMESTAMP(6) (the database
-- clock when the calling statement started), and writes it: renewed_at moves forward (at least by
-- a microsecond, so the row changes; nothing but status displays reads it). The write's X lock
-- lasts until the caller's transaction ends, and every takeover, forced release and reap writes
-- that row, so none commits before the caller's transaction does. A write rather than a locking
-- read, unlike the C++ guard, because a function cannot tell a Galera cluster apart: there a
-- locking read holds back nothing on the other nodes, while a written row is in the transaction's
-- write set, and certification lets the guarded transaction and a takeover of the row on another
-- node not both commit (the second fails with a deadlock error). It returns the fence. When no
-- such row exists it signals SQLSTATE 45L01 (error 1644, "sqllock: lock no longer held, roll the
-- transaction back …"): roll back. Called outside a transaction (autocommit) the lock ends with the
-- statement and protects nothing.
--
-- SQL SECURITY INVOKER: the caller needs EXECUTE on the function, and SELECT and UPDATE on the
-- lease tables (the runtime role has them).
-- With binary logging on, creating a function needs SUPER (or the server's
-- log_bin_trust_function_creators = 1): without either, this migration fails with error 1419 and
-- `sqllock migrate` says so; the locks keep working at schema 5 meanwhile. MODIFIES SQL DATA: it
-- writes the lease row.
-- MySQL DDL commits implicitly, so every statement here is idempotent.

DROP FUNCTION IF EXISTS {{table_guard}};

DELIMITER //
CREATE FUNCTION {{table_guard}}(lock_name VARBINARY(255), lock_fence BIGINT) RETURNS BIGINT
    NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
    DECLARE message VARCHAR(128) CHARACTER SET utf8mb4;
    UPDATE {{table}} SET renewed_at = GREATEST(UTC_TIMESTAMP(6), renewed_at + INTERVAL 1 MICROSECOND)
     WHERE resource = lock_name AND fence = lock_fence AND expires_at > UTC_TIMESTAMP(6);
    IF ROW_COUNT() > 0 THEN
        RETURN lock_fence;
    END IF;
    UPDATE {{table_permits}} SET renewed_at = GREATEST(UTC_TIMESTAMP(6), renewed_at + INTERVAL 1 MICROSECOND)
     WHERE resource = lock_name AND fence = lock_fence AND expires_at > UTC_TIMESTAMP(6);
    IF ROW_COUNT() > 0 THEN
        RETURN lock_fence;
    END IF;
    UPDATE {{table_queue}} SET renewed_at = GREATEST(UTC_TIMESTAMP(6), renewed_at + INTERVAL 1 MICROSECOND)
     WHERE resource = lock_name AND ticket = lock_fence AND expires_at > UTC_TIMESTAMP(6);
    IF ROW_COUNT() > 0 THEN
        RETURN lock_fence;
    END IF;
    -- MESSAGE_TEXT holds 128 characters: what to do comes first, a long name is cut. SIGNAL
    -- takes a variable or a literal, not an expression.
    SET message = LEFT(CONCAT('sqllock: lock no longer held, roll the transaction back (name ',
        IFNULL(CONCAT('''', CONVERT(lock_name USING utf8mb4), ''''), 'NULL'), ', fence ',
        IFNULL(lock_fence, 'NULL'), ')'), 128);
    SIGNAL SQLSTATE '45L01' SET MESSAGE_TEXT = message;
END//
DELIMITER ;
