-- name: session_events
-- Plan check: a session's events in time order, as ADK's get_session reads them back.
-- params: $app_name, $user_id, $session_id
SELECT id, invocation_id, "timestamp"
FROM events
WHERE app_name = $app_name AND user_id = $user_id AND session_id = $session_id
ORDER BY "timestamp", id
