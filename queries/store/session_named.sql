-- name: session_named
-- Whether any loaded record names the session id $session: a stored session (of $app and $user, if given), a logged record or a traced request (these name no app or user).
-- params: $session, $app, $user
SELECT EXISTS (SELECT 1 FROM sessions
               WHERE session_id = $session
                 AND ($app IS NULL OR app_name = $app) AND ($user IS NULL OR user_id = $user))
    OR EXISTS (SELECT 1 FROM logged WHERE session_id = $session)
    OR EXISTS (SELECT 1 FROM traced_calls WHERE session_id = $session);
