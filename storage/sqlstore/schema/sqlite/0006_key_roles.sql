-- Keys get a role. A 'user' key generates, reads models and uses its own responses; an
-- 'admin' key also manages the runtime's models (pull, push, create, copy, delete,
-- blobs) and reads /metrics, which names every key.
--
-- Keys created before roles existed become users. Until now every key could delete,
-- overwrite or exfiltrate the shared models; keeping that for keys handed to teammates
-- would keep the hole open on every upgraded server. The operator has the machine and
-- makes an admin key with `hearth keys create --name NAME --admin` (or uses --api-key,
-- whose keys are admin).
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin'));
