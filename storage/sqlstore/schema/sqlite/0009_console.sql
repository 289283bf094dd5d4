-- The console lists responses newest first across owners, filtered or not, and sums
-- usage since a time. Without an index on created_at both read the whole table (whose
-- rows carry the request and response JSON); with it a page is one index range.
CREATE INDEX responses_created ON responses (created_at, id);
