-- name: insert_releases
-- Record the release evidence in `new_releases` for this ingest; newer evidence of the same basis replaces older.
-- params: $ingest_id
INSERT OR REPLACE INTO session_releases BY NAME
SELECT *, $ingest_id AS ingest_id FROM new_releases;
