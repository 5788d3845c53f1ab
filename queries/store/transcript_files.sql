-- name: transcript_files
-- Every transcript file a successful ingest read for user $user_id, with its size and modification time then.
-- params: $user_id
SELECT f.path, f.size, f.mtime_ns
FROM transcript_files AS f
JOIN ingests AS i USING (ingest_id)
WHERE i.status = 'ok' AND f.user_id = $user_id;
