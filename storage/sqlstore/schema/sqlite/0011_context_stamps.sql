-- Each checkpoint (contexts row, 0004) gets a stamp: 16 random bytes written with it,
-- new each time a checkpoint is written. A checkpoint is never changed in place, only
-- dropped and written again, so the stamp names its contents: LoadChainTail reports
-- it, and a caller that keeps a checkpoint's items decoded under its stamp need not
-- read the checkpoint again (at 1,000 turns, a megabyte per continuation). Rows
-- written before this migration have none and are read whole, as before.
ALTER TABLE contexts ADD COLUMN stamp BLOB;
-- And the prompt the checkpoint's response was sent, with what names it (an opaque
-- record of engine.SavedPrompt): after a restart the first continuation of a long
-- chain splices its prompt onto it instead of rendering every turn again. NULL when
-- the runtime's renderer cannot save prompts, or for checkpoints written before.
ALTER TABLE contexts ADD COLUMN prompt BLOB;
