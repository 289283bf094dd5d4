-- hearth_share_parent(parent, owner) holds response parent FOR SHARE, as a new
-- response's transaction does before writing a child under it (a deletion of the
-- parent then waits for that transaction, or the transaction finds the parent gone),
-- and fails with no_data_found (P0002) when the parent is missing or another owner's.
-- Failing on the server is what lets a response's statements and its commit go to the
-- server in one round trip: a failed check aborts the transaction there, so the commit
-- sent after it does not happen, where a check read in Go needs the answer back before
-- the commit may be sent.
CREATE FUNCTION hearth_share_parent(parent text, parent_owner text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM responses WHERE id = parent AND owner = parent_owner FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'previous response % not found', parent USING ERRCODE = 'no_data_found';
    END IF;
END
$$;
