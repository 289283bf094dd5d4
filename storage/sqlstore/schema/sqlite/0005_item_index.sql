-- item_reference input items name a stored item by its id alone (storage.LookupItems).
-- Without this index each reference would scan every item of every response. The
-- index also carries the rowid, so "the most recently stored copy of this id" (an id
-- a client sends back as input is stored again under the new response) is the last
-- entry of one index range.
CREATE INDEX items_item_id ON items (item_id);
