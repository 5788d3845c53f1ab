-- name: fact_compactions
-- The exported sessions' rows of fact_compactions (the stored facts; an import rebuilds its own).
-- params: (none)
SELECT f.*
FROM fact_compactions AS f
JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY ALL;
