-- Vector stores: collections of a key's files, each file cut into chunks and embedded
-- in the background. seq orders the lists and their cursors. A file's attachment holds
-- its ingestion's status; its chunks hang from the attachment, so detaching a file or
-- deleting a store takes them. Attachments name files without a foreign key: deleting
-- an upload keeps what was read of it searchable, as OpenAI does.
CREATE TABLE vector_stores (
    seq                  INTEGER PRIMARY KEY,
    id                   TEXT    NOT NULL UNIQUE,
    owner                TEXT    NOT NULL,
    name                 TEXT    NOT NULL,
    model                TEXT    NOT NULL,   -- the embedding model of its chunks
    chunk_max_tokens     INTEGER NOT NULL,   -- the store's default static strategy
    chunk_overlap_tokens INTEGER NOT NULL,
    expires_after_days   INTEGER NOT NULL,   -- 0: never
    metadata             TEXT    NOT NULL,
    created_at           INTEGER NOT NULL,   -- unix milliseconds
    last_active_at       INTEGER NOT NULL,
    -- moves with every change of the store's chunks or their attributes, so a
    -- search that kept the chunks in memory knows when to read them again
    chunks_version       INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX vector_stores_by_owner ON vector_stores (owner, seq);

CREATE TABLE vector_store_batches (
    id         TEXT    NOT NULL PRIMARY KEY,
    store_id   TEXT    NOT NULL REFERENCES vector_stores (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE vector_store_files (
    seq                  INTEGER PRIMARY KEY,
    store_id             TEXT    NOT NULL REFERENCES vector_stores (id) ON DELETE CASCADE,
    file_id              TEXT    NOT NULL,
    batch_id             TEXT    NOT NULL,   -- '' when attached alone
    status               TEXT    NOT NULL,   -- in_progress, completed, failed, cancelled
    error_code           TEXT    NOT NULL,
    error_message        TEXT    NOT NULL,
    attributes           TEXT    NOT NULL,   -- a JSON object
    chunk_max_tokens     INTEGER NOT NULL,
    chunk_overlap_tokens INTEGER NOT NULL,
    usage_bytes          INTEGER NOT NULL,
    created_at           INTEGER NOT NULL,
    UNIQUE (store_id, file_id)
) STRICT;

-- The work a restarted process takes up again.
CREATE INDEX vector_store_files_in_progress ON vector_store_files (seq) WHERE status = 'in_progress';

CREATE TABLE vector_store_chunks (
    store_id TEXT    NOT NULL,
    file_id  TEXT    NOT NULL,
    idx      INTEGER NOT NULL,
    text     TEXT    NOT NULL,
    vector   BLOB    NOT NULL,   -- little-endian float32s
    PRIMARY KEY (store_id, file_id, idx),
    FOREIGN KEY (store_id, file_id) REFERENCES vector_store_files (store_id, file_id) ON DELETE CASCADE
) STRICT;
