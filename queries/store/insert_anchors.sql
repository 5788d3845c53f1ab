-- name: insert_anchors
-- Add the anchors in `new_anchors` (a result and string read twice, a file under two roots, keeps the first).
-- params: $ingest_id
INSERT OR IGNORE INTO anchors BY NAME
SELECT *, $ingest_id AS ingest_id FROM new_anchors;
