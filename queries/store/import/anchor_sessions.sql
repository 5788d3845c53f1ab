-- name: anchor_sessions
-- The sessions of an export (`imported`) searched for anchors, as loaded by ingest $ingest_id.
-- params: $ingest_id
INSERT OR IGNORE INTO anchor_sessions BY NAME
SELECT * EXCLUDE (ingest_id), $ingest_id AS ingest_id FROM imported;
