-- name: call_sessions
-- The ids of the sessions in `scope_sessions` that have a model call.
-- params: (none)
SELECT DISTINCT session_id
FROM fact_calls
SEMI JOIN scope_sessions USING (app_name, user_id, session_id);
