-- Each response also keeps its input and its output items packed into one BLOB each
-- (storage/pack.go). LoadChain reads a 1,000-turn chain as 1,000 rows instead of
-- 1,000 links plus 3,000 item rows: the driver's cost is per row and per column (cgo
-- calls), and it was half of the load. The items table stays the source for paging
-- (input_items) and for integrity; the packs are written in the same transactions.
-- NULL means "not packed": rows written before this migration are packed by
-- storage.Open (backfillPacks), and an in-flight response has no output pack yet.
ALTER TABLE responses ADD COLUMN input_pack BLOB;
ALTER TABLE responses ADD COLUMN output_pack BLOB;
-- Finds what the backfill still has to pack; empty once it has run, so it costs nothing.
CREATE INDEX responses_unpacked ON responses (id) WHERE input_pack IS NULL;
