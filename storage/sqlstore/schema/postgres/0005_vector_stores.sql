-- Vector stores: collections of a key's files, each file cut into chunks and embedded
-- in the background. seq orders the lists and their cursors. A file's attachment holds
-- its ingestion's status; its chunks hang from the attachment, so detaching a file or
-- deleting a store takes them. Attachments name files without a foreign key: deleting
-- an upload keeps what was read of it searchable, as OpenAI does.
CREATE TABLE vector_stores (
    seq                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                   text COLLATE "C" NOT NULL UNIQUE,
    owner                text COLLATE "C" NOT NULL,
    name                 text    NOT NULL,
    model                text    NOT NULL,
    chunk_max_tokens     integer NOT NULL,
    chunk_overlap_tokens integer NOT NULL,
    expires_after_days   integer NOT NULL,
    metadata             text    NOT NULL,
    created_at           bigint  NOT NULL,
    last_active_at       bigint  NOT NULL,
    chunks_version       bigint  NOT NULL DEFAULT 0
);
CREATE INDEX vector_stores_by_owner ON vector_stores (owner, seq);

CREATE TABLE vector_store_batches (
    id         text COLLATE "C" NOT NULL PRIMARY KEY,
    store_id   text COLLATE "C" NOT NULL REFERENCES vector_stores (id) ON DELETE CASCADE,
    created_at bigint NOT NULL
);

CREATE TABLE vector_store_files (
    seq                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    store_id             text COLLATE "C" NOT NULL REFERENCES vector_stores (id) ON DELETE CASCADE,
    file_id              text COLLATE "C" NOT NULL,
    batch_id             text COLLATE "C" NOT NULL,
    status               text    NOT NULL,
    error_code           text    NOT NULL,
    error_message        text    NOT NULL,
    attributes           text    NOT NULL,
    chunk_max_tokens     integer NOT NULL,
    chunk_overlap_tokens integer NOT NULL,
    usage_bytes          bigint  NOT NULL,
    created_at           bigint  NOT NULL,
    UNIQUE (store_id, file_id)
);
CREATE INDEX vector_store_files_in_progress ON vector_store_files (seq) WHERE status = 'in_progress';

CREATE TABLE vector_store_chunks (
    store_id text COLLATE "C" NOT NULL,
    file_id  text COLLATE "C" NOT NULL,
    idx      integer NOT NULL,
    text     text    NOT NULL,
    vector   bytea   NOT NULL,
    PRIMARY KEY (store_id, file_id, idx),
    FOREIGN KEY (store_id, file_id) REFERENCES vector_store_files (store_id, file_id) ON DELETE CASCADE
);
