-- name: migrate_11
-- Store schema 11: a traced request's system instruction and tool declarations as sent, each by its SHA-256 and its first 2,000 characters (the tool declarations as compact JSON), so that the prompt cache's breaks can be told apart by what changed (`forensics cache`: cause system or tools, and where the two differ). Requests traced before are left without them (null: not compared).
-- params: (none)
ALTER TABLE traced_calls ADD COLUMN IF NOT EXISTS system_sha256 VARCHAR;
ALTER TABLE traced_calls ADD COLUMN IF NOT EXISTS system_head VARCHAR;
ALTER TABLE traced_calls ADD COLUMN IF NOT EXISTS tools_sha256 VARCHAR;
ALTER TABLE traced_calls ADD COLUMN IF NOT EXISTS tools_head VARCHAR;
