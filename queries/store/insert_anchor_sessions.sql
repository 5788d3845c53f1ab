-- name: insert_anchor_sessions
-- Record the sessions in `new_anchor_sessions` as searched for anchors (one stored already is passed over by the join, as in insert_sessions).
-- params: $ingest_id
INSERT OR IGNORE INTO anchor_sessions BY NAME
SELECT n.*, $ingest_id AS ingest_id
FROM new_anchor_sessions AS n
ANTI JOIN anchor_sessions USING (app_name, user_id, session_id);
