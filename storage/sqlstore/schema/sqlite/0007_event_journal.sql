-- The event journal: every event of a stored response as it was sent, with its
-- original sequence number, so that GET /v1/responses/{id}?stream=true&starting_after=N
-- resumes a stream exactly (storage/journal.go). The server writes a batch of events
-- at intervals while the response runs, and the last batch in the transaction that
-- stores its final state. The journal of a finished response outlives restarts until
-- the retention setting prunes it, which deletes journals, never responses.
--
-- One row per batch, not per event: a short response's journal is one row written
-- with its final state, and the per-row costs (the driver's calls, the key repeated in
-- every row) are paid once per batch instead of once per token. A rowid table, as
-- items: batches are often a few KB, which WITHOUT ROWID would spill to overflow pages.
CREATE TABLE events (
    response_id TEXT    NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    first_seq   INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    -- The type of the batch's last event: tells whether a journal reached its
    -- terminal event without unpacking it.
    last_type   TEXT    NOT NULL,
    -- The batch's events, numbered first_seq, first_seq+1, ...: one line each,
    -- "<type> <JSON>\n" (the JSON in hearth's own event names).
    data        BLOB    NOT NULL,
    PRIMARY KEY (response_id, first_seq),
    CHECK (last_seq >= first_seq)
) STRICT;

-- One row per journal: when it ended (NULL while the response runs), for pruning by age
-- without scanning the responses table, whose rows carry the response JSON.
CREATE TABLE journals (
    response_id TEXT    NOT NULL PRIMARY KEY REFERENCES responses (id) ON DELETE CASCADE,
    ended_at    INTEGER -- unix milliseconds
) STRICT;

CREATE INDEX journals_ended ON journals (ended_at) WHERE ended_at IS NOT NULL;
