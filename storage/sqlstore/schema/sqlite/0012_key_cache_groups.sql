-- Keys get a cache group. The runtime's KV cache is shared by every key, and
-- usage.input_tokens_details.cached_tokens counts only a prefix left there by the same
-- key or by a key of the same group: otherwise a key could guess another key's prompt
-- and read how much of it was cached. '' (every key until now) is a group of its own;
-- an admin puts keys in one with `hearth keys create --cache-group NAME` or
-- `hearth keys update NAME --cache-group GROUP`.
ALTER TABLE api_keys ADD COLUMN cache_group TEXT NOT NULL DEFAULT '';
