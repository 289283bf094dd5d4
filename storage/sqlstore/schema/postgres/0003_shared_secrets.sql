-- Secrets every replica must hold the same of, kept in the database they share rather
-- than in each replica's data directory: the key that seals encrypted reasoning and
-- compaction items ('seal.key'), so that a blob one replica sealed opens on another.
-- A row is written once (the first replica to start) and never changed by hearth.
CREATE TABLE shared_secrets (
    name       text COLLATE "C" NOT NULL PRIMARY KEY,
    value      bytea  NOT NULL,
    created_at bigint NOT NULL
);
