-- name: delete_sessions
-- Delete the stored events, parts, transcript details and anchors of the sessions in `replaced_sessions` (a source that reads a session whole again replaces it); returns how many events went.
-- params: (none)
DELETE FROM parts WHERE (app_name, user_id, session_id) IN (
    SELECT (app_name, user_id, session_id) FROM replaced_sessions);
DELETE FROM transcript_events WHERE (app_name, user_id, session_id) IN (
    SELECT (app_name, user_id, session_id) FROM replaced_sessions);
DELETE FROM anchors WHERE (app_name, user_id, session_id) IN (
    SELECT (app_name, user_id, session_id) FROM replaced_sessions);
DELETE FROM anchor_sessions WHERE (app_name, user_id, session_id) IN (
    SELECT (app_name, user_id, session_id) FROM replaced_sessions);
DELETE FROM events WHERE (app_name, user_id, session_id) IN (
    SELECT (app_name, user_id, session_id) FROM replaced_sessions);
