-- name: traced_calls
-- Traced requests of an export (`imported`) the store does not hold yet.
-- params: $ingest_id
INSERT OR IGNORE INTO traced_calls BY NAME
SELECT * EXCLUDE (ingest_id), $ingest_id AS ingest_id FROM imported;
