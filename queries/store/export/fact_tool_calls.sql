-- name: fact_tool_calls
-- The exported sessions' rows of fact_tool_calls (the stored facts; an import rebuilds its own).
-- params: (none)
SELECT f.*
FROM fact_tool_calls AS f
JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY ALL;
