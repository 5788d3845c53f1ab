-- name: by_session
-- Plan check: one session's events by (app_name, user_id, session_id), ADK's composite index path.
-- params: $app_name, $user_id, $session_id
SELECT id, invocation_id, "timestamp"
FROM events
WHERE app_name = $app_name AND user_id = $user_id AND session_id = $session_id
