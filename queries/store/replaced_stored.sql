-- name: replaced_stored
-- How many of the sessions in `replaced_sessions` the store holds (`sessions` has a row for every session whose events are stored: insert_batch writes both, undo_ingest deletes both).
-- params: (none)
SELECT count(*) FROM sessions
SEMI JOIN replaced_sessions USING (app_name, user_id, session_id);
