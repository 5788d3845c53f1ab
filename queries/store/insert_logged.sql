-- name: insert_logged
-- Add the records of the registered table `logged_batch` that the store does not hold yet (by record_key; the first document read wins, within the batch too).
-- params: $ingest_id
INSERT INTO logged
SELECT b.*, $ingest_id
FROM (SELECT DISTINCT ON (record_key) * FROM logged_batch) AS b
WHERE NOT EXISTS (SELECT 1 FROM logged AS l WHERE l.record_key = b.record_key);
