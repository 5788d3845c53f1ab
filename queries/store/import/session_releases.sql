-- name: session_releases
-- Release evidence of an export (`imported`); evidence already stored keeps its row.
-- params: $ingest_id
INSERT OR IGNORE INTO session_releases BY NAME
SELECT * EXCLUDE (ingest_id), $ingest_id AS ingest_id FROM imported;
