-- name: insert_events
-- Add the normalised events in `new_events` that the store does not hold yet.
-- params: $ingest_id
INSERT OR IGNORE INTO events BY NAME
SELECT *, $ingest_id AS ingest_id FROM new_events;
