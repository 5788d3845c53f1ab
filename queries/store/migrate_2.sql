-- name: migrate_2
-- Store schema 2: the ledger records what each ingest found out about its source (notes).
-- params: (none)
ALTER TABLE ingests ADD COLUMN IF NOT EXISTS notes JSON;
