-- name: insert_sessions
-- Record the normalised sessions in `new_sessions`; the first source to see a session wins (one stored already is passed over by the join, which an appending batch's plain INSERT needs: a session's row comes with each batch of its events).
-- params: $source, $ingest_id
INSERT OR IGNORE INTO sessions BY NAME
SELECT n.*, $source AS source, $ingest_id AS ingest_id
FROM new_sessions AS n
ANTI JOIN sessions USING (app_name, user_id, session_id);
