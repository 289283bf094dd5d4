-- Checkpoints: the whole context of some finished responses, materialised (every link
-- from the root of the chain down to it, with their items; storage/context.go).
-- LoadChain walks up from the response asked for until the root or a checkpoint, so a
-- long chain loads as at most checkpointEvery links plus one row. A checkpoint is a
-- cache of what the responses rows say, kept where it is cheap and safe:
--   - written when a response completes checkpointEvery links below the previous
--     checkpoint (or the root), which is then dropped, so a linear chain keeps one;
--   - every change to a response (completion, status change, deletion) drops the
--     checkpoints of its descendants, which would otherwise carry the old state.
CREATE TABLE contexts (
    response_id TEXT NOT NULL PRIMARY KEY REFERENCES responses (id) ON DELETE CASCADE,
    context     BLOB NOT NULL
) STRICT;

-- Finds a response's children, to drop their contexts when it changes.
CREATE INDEX responses_children ON responses (previous_response_id) WHERE previous_response_id IS NOT NULL;
