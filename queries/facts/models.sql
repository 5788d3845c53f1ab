-- name: models
-- The models whose ratios the sessions in `scope_sessions` need: their calls' models and their main models.
-- params: (none)
SELECT DISTINCT f.model FROM fact_calls AS f SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
UNION
SELECT main_model FROM scope_sessions;
