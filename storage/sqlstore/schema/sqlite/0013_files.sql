-- Files (the Files API): uploads owned by one key, their bytes kept in the database so
-- that the one file holding the records holds them too. seq orders a key's files for
-- the list and its cursors; the content is a table of its own so that listing and
-- reading records never touches the bytes.
CREATE TABLE files (
    seq        INTEGER PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    -- storage.OwnerOf(api key), as for responses; every read filters on it.
    owner      TEXT    NOT NULL,
    filename   TEXT    NOT NULL,
    purpose    TEXT    NOT NULL,
    bytes      INTEGER NOT NULL,
    created_at INTEGER NOT NULL    -- unix milliseconds
) STRICT;

CREATE INDEX files_by_owner ON files (owner, seq);

CREATE TABLE file_contents (
    file_id TEXT NOT NULL PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE,
    content BLOB NOT NULL
) STRICT;
