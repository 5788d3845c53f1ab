-- name: session_keys_for
-- The (app, user, session) keys of the stored sessions whose id is in $sessions.
-- params: $sessions
SELECT app_name, user_id, session_id
FROM sessions
WHERE list_contains($sessions, session_id);
