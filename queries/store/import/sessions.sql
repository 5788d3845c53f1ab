-- name: sessions
-- Sessions of an export (`imported`); a session already stored keeps its row.
-- params: $ingest_id
INSERT OR IGNORE INTO sessions BY NAME
SELECT * EXCLUDE (ingest_id), $ingest_id AS ingest_id FROM imported;
