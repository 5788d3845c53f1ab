-- name: insert_transcript_files
-- Record the transcript files in `new_transcript_files` as read by ingest $ingest_id (a file read again replaces its row).
-- params: $ingest_id
INSERT OR REPLACE INTO transcript_files BY NAME
SELECT *, $ingest_id AS ingest_id FROM new_transcript_files;
