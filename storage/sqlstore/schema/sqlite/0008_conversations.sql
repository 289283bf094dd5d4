-- Conversations (the Conversations API): a durable list of items owned by one key.
-- Responses created with a conversation append their input and output items here;
-- clients add and delete items directly too.

CREATE TABLE conversations (
    id         TEXT    NOT NULL PRIMARY KEY,
    -- storage.OwnerOf(api key), as for responses; every read filters on it.
    owner      TEXT    NOT NULL,
    metadata   TEXT    NOT NULL,   -- a JSON object of strings
    created_at INTEGER NOT NULL    -- unix milliseconds
) STRICT;

-- A conversation's items in order. Positions grow and are not renumbered when an item
-- is deleted, so a page cursor (an item id) keeps its place. response_id is the
-- response whose input or output the item was (NULL when added directly); it is
-- deliberately not a foreign key: deleting a response leaves the conversation as it
-- was, and deleting a conversation (ON DELETE CASCADE) leaves the responses.
CREATE TABLE conversation_items (
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    item_id         TEXT    NOT NULL,
    type            TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    response_id     TEXT,
    PRIMARY KEY (conversation_id, position)
) STRICT;

-- Item ids are unique within a conversation: GET and DELETE of an item, and paging
-- after an item, find it by id.
CREATE UNIQUE INDEX conversation_items_by_id ON conversation_items (conversation_id, item_id);
