-- name: insert_sessions
-- Record the normalised sessions in `new_sessions`; the first source to see a session wins.
-- params: $source, $ingest_id
INSERT OR IGNORE INTO sessions BY NAME
SELECT *, $source AS source, $ingest_id AS ingest_id FROM new_sessions;
