-- The event journal: every event of a stored response as it was sent, with its
-- original sequence number, so that GET /v1/responses/{id}?stream=true&starting_after=N
-- resumes a stream exactly (storage/journal.go). Rows are written in batches while the
-- response runs; the journal of a finished response outlives restarts until
-- pruned by the retention setting, which deletes journals, never responses.
--
-- WITHOUT ROWID: events are read in key order (one response's, from a sequence number
-- on) and are small (a delta is ~150 bytes), so clustering them by the key keeps one
-- response's events on adjacent pages.
CREATE TABLE events (
    response_id TEXT    NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    data        TEXT    NOT NULL, -- the event's JSON, hearth's own event names
    PRIMARY KEY (response_id, seq)
) WITHOUT ROWID, STRICT;

-- One row per journal: when it ended (NULL while the response runs), for pruning by age
-- without scanning the responses table, whose rows carry the response JSON.
CREATE TABLE journals (
    response_id TEXT    NOT NULL PRIMARY KEY REFERENCES responses (id) ON DELETE CASCADE,
    ended_at    INTEGER -- unix milliseconds
) STRICT;

CREATE INDEX journals_ended ON journals (ended_at) WHERE ended_at IS NOT NULL;
