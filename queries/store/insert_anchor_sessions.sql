-- name: insert_anchor_sessions
-- Record the sessions in `new_anchor_sessions` as searched for anchors.
-- params: $ingest_id
INSERT OR IGNORE INTO anchor_sessions BY NAME
SELECT *, $ingest_id AS ingest_id FROM new_anchor_sessions;
