-- hearth's schema on PostgreSQL: the same records as storage/sqlite's migrations
-- 0001-0012, in PostgreSQL's types. Times are unix milliseconds (bigint), as in SQLite,
-- so that both stores keep the same precision. JSON is text, not jsonb: the API returns
-- the stored objects byte for byte, and jsonb would reorder their keys. Ids and names
-- use the "C" collation, so that ordering by them is bytewise whatever the database's
-- locale, as in SQLite.

CREATE TABLE responses (
    id                   text COLLATE "C" NOT NULL PRIMARY KEY,
    -- SHA-256 hex of the caller's API key (storage.OwnerOf); every read filters on it.
    owner                text COLLATE "C" NOT NULL,
    model                text    NOT NULL,
    status               text    NOT NULL CHECK (status IN
                             ('queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled')),
    background           boolean NOT NULL DEFAULT false,
    -- Deliberately not a foreign key: deleting a response leaves its children pointing
    -- at the missing id, so that a chain load sees the gap and reports it broken.
    previous_response_id text COLLATE "C",
    request              text    NOT NULL,
    response             text,
    error                text,
    input_tokens         bigint  NOT NULL DEFAULT 0,
    output_tokens        bigint  NOT NULL DEFAULT 0,
    cached_tokens        bigint  NOT NULL DEFAULT 0,
    reasoning_tokens     bigint  NOT NULL DEFAULT 0,
    created_at           bigint  NOT NULL,
    completed_at         bigint,
    -- The input and output items packed (the same format as storage/sqlite's packs), so
    -- that a chain loads as one row per link; output_pack is NULL while in flight.
    input_pack           bytea   NOT NULL,
    output_pack          bytea,
    -- The label of the runtime that served it ('' when not recorded).
    runtime              text    NOT NULL DEFAULT '',
    -- The replica (hearth process) that created it, so that a replica restarting fails
    -- only what it left in flight itself (RecoverInFlight).
    replica              text    NOT NULL DEFAULT ''
);

CREATE INDEX responses_in_flight ON responses (replica) WHERE status IN ('queued', 'in_progress');
CREATE INDEX responses_children ON responses (previous_response_id) WHERE previous_response_id IS NOT NULL;
CREATE INDEX responses_created ON responses (created_at, id);

-- Items of a response, in order: the source for paging (input_items), item_reference
-- look-ups and the console. seq orders copies of one item id by when they were stored.
CREATE TABLE items (
    response_id text COLLATE "C" NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    kind        text    NOT NULL CHECK (kind IN ('input', 'output')),
    position    bigint  NOT NULL,
    item_id     text COLLATE "C" NOT NULL,
    type        text    NOT NULL,
    body        text    NOT NULL,
    seq         bigserial NOT NULL,
    PRIMARY KEY (response_id, kind, position)
);
CREATE INDEX items_item_id ON items (item_id, seq);

-- Checkpoints: the whole context of some finished responses, materialised (see
-- storage/sqlite's migration 0004 and 0011); stamp is new each time one is written.
CREATE TABLE contexts (
    response_id text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES responses (id) ON DELETE CASCADE,
    context     bytea NOT NULL,
    stamp       bytea NOT NULL,
    prompt      bytea
);

-- ChainEpoch, shared by every replica: one row, moved in the transaction of every
-- change that can alter a settled chain, so the new count is visible exactly when the
-- change is.
CREATE TABLE chain_epoch (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    epoch bigint  NOT NULL
);
INSERT INTO chain_epoch (epoch) VALUES (0);

-- The event journal, one row per batch of events (see storage/sqlite's 0007).
CREATE TABLE events (
    response_id text COLLATE "C" NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    first_seq   integer NOT NULL,
    last_seq    integer NOT NULL,
    last_type   text    NOT NULL,
    data        bytea   NOT NULL,
    PRIMARY KEY (response_id, first_seq),
    CHECK (last_seq >= first_seq)
);

CREATE TABLE journals (
    response_id text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES responses (id) ON DELETE CASCADE,
    ended_at    bigint
);
CREATE INDEX journals_ended ON journals (ended_at) WHERE ended_at IS NOT NULL;

CREATE TABLE conversations (
    id         text COLLATE "C" NOT NULL PRIMARY KEY,
    owner      text COLLATE "C" NOT NULL,
    metadata   text   NOT NULL,
    created_at bigint NOT NULL
);

-- Positions grow and are not renumbered, so a page cursor keeps its place. response_id
-- is deliberately not a foreign key (a deleted response leaves the conversation as it
-- was).
CREATE TABLE conversation_items (
    conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position        bigint NOT NULL,
    item_id         text COLLATE "C" NOT NULL,
    type            text   NOT NULL,
    body            text   NOT NULL,
    response_id     text COLLATE "C",
    PRIMARY KEY (conversation_id, position)
);
CREATE UNIQUE INDEX conversation_items_by_id ON conversation_items (conversation_id, item_id);

-- API keys: only the hash is stored; rows are never deleted (a revoked key keeps its
-- name taken). seq keeps the order of creation within one millisecond.
CREATE TABLE api_keys (
    id          text COLLATE "C" NOT NULL PRIMARY KEY,
    name        text COLLATE "C" NOT NULL UNIQUE,
    hash        text COLLATE "C" NOT NULL UNIQUE,
    prefix      text   NOT NULL,
    role        text   NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin')),
    cache_group text   NOT NULL DEFAULT '',
    created_at  bigint NOT NULL,
    revoked_at  bigint,
    seq         bigserial NOT NULL
);
