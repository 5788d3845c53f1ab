-- name: logged
-- Logged records of an export (`imported`) the store does not hold yet (by record_key, as an ingest stores them), as loaded by ingest $ingest_id.
-- params: $ingest_id
INSERT INTO logged BY NAME
SELECT i.* EXCLUDE (day, ingest_id), $ingest_id AS ingest_id
FROM imported AS i
WHERE NOT EXISTS (SELECT 1 FROM logged AS l WHERE l.record_key = i.record_key);
