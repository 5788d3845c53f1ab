-- name: undo_ingest
-- Remove what the ingest in `undone_ingest` (a registered one-row table) stored: an ADK ingest commits batch by batch and is undone whole when it stops; its events with their parts, the sessions and release evidence it created.
-- params: (none)
DELETE FROM parts WHERE (app_name, user_id, session_id, event_id) IN (
    SELECT (app_name, user_id, session_id, event_id) FROM events
    WHERE ingest_id = (SELECT ingest_id FROM undone_ingest));
DELETE FROM session_releases WHERE ingest_id = (SELECT ingest_id FROM undone_ingest);
DELETE FROM sessions WHERE ingest_id = (SELECT ingest_id FROM undone_ingest);
DELETE FROM events WHERE ingest_id = (SELECT ingest_id FROM undone_ingest);
