-- API keys created with `hearth keys create`. The key itself is shown once and never
-- stored: hash is storage.OwnerOf(key), the SHA-256 hex that is also the owner of the
-- key's responses, so a key's row and its responses meet without the secret.
-- Rows are never deleted: a revoked key keeps its row (revoked_at set), so that its
-- name stays unique and a server that once had keys never falls back to no auth.

CREATE TABLE api_keys (
    id         TEXT    NOT NULL PRIMARY KEY,   -- public id, e.g. key_3f9a...
    name       TEXT    NOT NULL UNIQUE,
    hash       TEXT    NOT NULL UNIQUE,
    -- The first characters of the key, to recognise it in a list.
    prefix     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,               -- unix milliseconds
    revoked_at INTEGER                         -- unix milliseconds
) STRICT;
