-- Responses and their items. Tables are STRICT so that a wrongly typed bind (a []byte
-- where JSON text is expected, a string in a counter) fails loudly instead of being
-- stored with SQLite's loose affinity and read back as something else.

CREATE TABLE responses (
    id                   TEXT    NOT NULL PRIMARY KEY,
    -- SHA-256 hex of the caller's API key (storage.OwnerOf); every read filters on it.
    owner                TEXT    NOT NULL,
    model                TEXT    NOT NULL,
    status               TEXT    NOT NULL CHECK (status IN
                             ('queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled')),
    background           INTEGER NOT NULL DEFAULT 0 CHECK (background IN (0, 1)),
    -- Deliberately not a foreign key: deleting a response must leave its children
    -- pointing at the missing id, so that LoadChain sees the gap and reports the chain
    -- as broken instead of silently starting the conversation at the child.
    previous_response_id TEXT,
    -- Request parameters without the input items (those are rows in items).
    request              TEXT    NOT NULL,
    -- The full response object as the API returns it; rewritten on every status change.
    response             TEXT,
    error                TEXT,
    input_tokens         INTEGER NOT NULL DEFAULT 0,
    output_tokens        INTEGER NOT NULL DEFAULT 0,
    cached_tokens        INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens     INTEGER NOT NULL DEFAULT 0,
    created_at           INTEGER NOT NULL, -- unix milliseconds
    completed_at         INTEGER           -- unix milliseconds; set with a terminal status
) STRICT;

-- Startup recovery (and any background worker) looks for rows still in flight. Finished
-- rows, nearly all of them, stay out of this partial index, so it costs almost nothing.
CREATE INDEX responses_in_flight ON responses (status) WHERE status IN ('queued', 'in_progress');

-- LoadChain walks previous_response_id one link at a time. With every column the walk
-- reads in this index, each step is one descent of a small index instead of a lookup
-- in the table, whose rows carry the request and response JSON.
CREATE INDEX responses_chain ON responses (id, owner, previous_response_id, model, status);

-- Input and output items of a response, in order. The primary key is also the read
-- order of LoadChain and ListInputItems ('input' sorts before 'output'), and its
-- response_id prefix serves the ON DELETE CASCADE from responses. A rowid table, not
-- WITHOUT ROWID: clustering by the key measured no faster for chain loads (a response's
-- items are inserted together, so they are adjacent anyway), and a rowid table keeps
-- items up to ~4 KB on the leaf page where WITHOUT ROWID spills anything over ~1 KB
-- (long messages, tool outputs) to overflow pages.
CREATE TABLE items (
    response_id TEXT    NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    kind        TEXT    NOT NULL CHECK (kind IN ('input', 'output')),
    position    INTEGER NOT NULL,
    item_id     TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    PRIMARY KEY (response_id, kind, position)
) STRICT;
