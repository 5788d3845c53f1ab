-- name: session_keys
-- The (app, user, session) keys whose session id is $session, narrowed by app and user if given.
-- params: $session, $app, $user
SELECT app_name, user_id, session_id
FROM sessions
WHERE session_id = $session
  AND ($app IS NULL OR app_name = $app) AND ($user IS NULL OR user_id = $user)
ORDER BY app_name, user_id;
