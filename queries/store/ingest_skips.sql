-- name: ingest_skips
-- The rows one ingest skipped, with where each came from and why.
-- params: $ingest_id
SELECT locator, reason FROM ingest_skips WHERE ingest_id = $ingest_id ORDER BY locator;
