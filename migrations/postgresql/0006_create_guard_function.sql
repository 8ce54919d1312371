-- sqllock schema 6 for PostgreSQL: the SQL guard, a function any client can call in its own
-- transaction to make its writes conditional on a lock it holds (docs/design.md, "Guarded writes").
--
--   BEGIN;
--   SELECT distributed_lock_guard('invoice:42', 1234);   -- the lock's name and its fencing token
--   UPDATE invoices SET status = 'paid' WHERE id = 42;
--   COMMIT;
--
-- {{table_guard}}(lock_name, lock_fence) finds the lease row that has this name and fence — a lock
-- row, a semaphore permit or a fair/read-write lock's queue entry: every fence and ticket comes
-- from the one sequence, so the pair names one row — unexpired by clock_timestamp() (the database
-- clock at the call, not the transaction's start), locks it FOR SHARE until the caller's
-- transaction ends, and returns the fence. Every takeover, forced release and reap writes that
-- row, so none commits before the caller's transaction does: what the caller commits after the
-- guard is ordered before the next holder's grant. When no such row exists it raises SQLSTATE
-- 45L01 ("sqllock: lock no longer held, roll the transaction back …"): roll back.
--
-- SECURITY INVOKER (the default): it runs with the caller's rights, so the caller needs UPDATE on
-- the lease tables (FOR SHARE needs it; the runtime role has it) and EXECUTE (PUBLIC has it).
-- search_path is pinned to pg_catalog, the schema the tables were created in (the migrating
-- session's current schema) and, last, pg_temp: a table or operator of the caller's search path
-- cannot stand in for them.
-- Statements end at "//" (DELIMITER below): the function body has semicolons at line ends.
-- Append-only history: never edit this file after release; add a new numbered file instead.

DELIMITER //
CREATE FUNCTION {{table_guard}}(lock_name text, lock_fence bigint) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
AS $guard$
DECLARE
    held bigint;
BEGIN
    SELECT l.fence INTO held FROM {{table}} AS l
     WHERE l.resource = lock_name AND l.fence = lock_fence AND l.expires_at > clock_timestamp()
       FOR SHARE;
    IF FOUND THEN
        RETURN held;
    END IF;
    SELECT p.fence INTO held FROM {{table_permits}} AS p
     WHERE p.resource = lock_name AND p.fence = lock_fence AND p.expires_at > clock_timestamp()
       FOR SHARE;
    IF FOUND THEN
        RETURN held;
    END IF;
    SELECT q.ticket INTO held FROM {{table_queue}} AS q
     WHERE q.resource = lock_name AND q.ticket = lock_fence AND q.expires_at > clock_timestamp()
       FOR SHARE;
    IF FOUND THEN
        RETURN held;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = '45L01',
        MESSAGE = format('sqllock: lock no longer held, roll the transaction back (name %s, fence %s)',
                         coalesce(quote_literal(lock_name), 'NULL'), coalesce(lock_fence::text, 'NULL')),
        DETAIL = 'Its lease expired, or it was taken over or released by force; '
                 'the writes of this transaction are not protected by the lock.',
        HINT = 'ROLLBACK, then take the lock again before writing.';
END
$guard$//

DO $pin$
BEGIN
    EXECUTE 'ALTER FUNCTION {{table_guard}}(text, bigint) SET search_path = pg_catalog, '
            || quote_ident(current_schema()) || ', pg_temp';
END
$pin$//
DELIMITER ;
