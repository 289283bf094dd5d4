-- Files (the Files API): uploads owned by one key. Their bytes live in the database,
-- so every replica serves every upload with nothing shared on disk. seq orders a key's
-- files for the list and its cursors; the content is a table of its own so that
-- listing and reading records never touches the bytes.
CREATE TABLE files (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id         text COLLATE "C" NOT NULL UNIQUE,
    owner      text COLLATE "C" NOT NULL,
    filename   text   NOT NULL,
    purpose    text   NOT NULL,
    bytes      bigint NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX files_by_owner ON files (owner, seq);

CREATE TABLE file_contents (
    file_id text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE,
    content bytea NOT NULL
);
