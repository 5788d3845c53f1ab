-- name: forget_transcript_files
-- Delete what an earlier ingest recorded of the files in `new_forgotten_files`, whose sessions ingest $ingest_id reads whole again (it records them once read: transcript_files).
-- params: $ingest_id
DELETE FROM transcript_files
WHERE ingest_id <> $ingest_id
  AND (path, user_id) IN (SELECT (path, user_id) FROM new_forgotten_files);
