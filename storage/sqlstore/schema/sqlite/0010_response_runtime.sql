-- The runtime that served each response (engine/pool's label: "embedded" or host:port),
-- so a continuation (previous_response_id) goes back to the runtime whose KV cache holds
-- its prefix. Empty for responses served before, or not yet finished.
ALTER TABLE responses ADD COLUMN runtime TEXT NOT NULL DEFAULT '';
