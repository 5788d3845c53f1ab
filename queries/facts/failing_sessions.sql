-- name: failing_sessions
-- The rows of `scope_sessions` whose sessions have a failed model call, in its order.
-- params: (none)
SELECT o.*
FROM scope_sessions AS o
SEMI JOIN (SELECT DISTINCT app_name, user_id, session_id FROM fact_calls WHERE kind = 'failed')
    USING (app_name, user_id, session_id)
ORDER BY o.ordinal;
