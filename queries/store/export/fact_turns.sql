-- name: fact_turns
-- The exported sessions' rows of fact_turns (the stored facts; an import rebuilds its own).
-- params: (none)
SELECT f.*
FROM fact_turns AS f
JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY ALL;
