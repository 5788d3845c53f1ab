-- name: fact_carried
-- The exported sessions' rows of fact_carried (the stored facts; an import rebuilds its own).
-- params: (none)
SELECT f.*
FROM fact_carried AS f
JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY ALL;
