-- attempts counts the times ingestion took a file in progress up without making
-- progress since: counted before each attempt starts, so a file whose reading ends the
-- process is counted even though nothing after the crash runs, and failed once the
-- attempts are used up instead of being resumed at every start. Chunks stored while a
-- file is in progress are its durable progress (searches read completed files only).
ALTER TABLE vector_store_files ADD COLUMN attempts integer NOT NULL DEFAULT 0;
