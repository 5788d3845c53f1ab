-- name: fact_sessions
-- The exported sessions' rows of fact_sessions (the stored facts; an import rebuilds its own).
-- params: (none)
SELECT f.* EXCLUDE (stamp)
FROM fact_sessions AS f
JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY ALL;
