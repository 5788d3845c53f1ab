-- name: insert_transcript_events
-- Add the transcript details in `new_transcript_events` of events the store does not hold yet (the first read of an event keeps its details, as its event).
-- params: $ingest_id
INSERT OR IGNORE INTO transcript_events BY NAME
SELECT *, $ingest_id AS ingest_id FROM new_transcript_events;
