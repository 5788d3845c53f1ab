-- name: anchors
-- Anchors of an export (`imported`) the store does not hold yet, as loaded by ingest $ingest_id.
-- params: $ingest_id
INSERT OR IGNORE INTO anchors BY NAME
SELECT * EXCLUDE (ingest_id), $ingest_id AS ingest_id FROM imported;
