-- rayflow durable tasks, schema version 4: pipelined fenced writes.
-- A pgx batch is one round trip and one implicit transaction; a fenced
-- statement whose fence matched no row must abort it (a zero-row UPDATE is
-- not an error). rayflow_require(n, sqlstate, message) passes n through
-- and raises sqlstate when n is 0 or NULL, so everything the batch wrote
-- rolls back and the writer classifies the failure with a read of its own.
-- rayflow uses RF001 for a fence that no longer matches and RF002 for a
-- staged topology that failed verification.
CREATE FUNCTION rayflow_require(matched bigint, sqlstate text, message text) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF matched IS NULL OR matched = 0 THEN
        RAISE EXCEPTION USING ERRCODE = sqlstate, MESSAGE = message;
    END IF;
    RETURN matched;
END
$$;
