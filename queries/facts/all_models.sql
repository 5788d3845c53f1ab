-- name: all_models
-- Every model whose ratio a selection of the store's sessions could need: the models of the stored calls and the sessions' main models (facts/models.sql over all sessions).
-- params: (none)
SELECT DISTINCT model FROM fact_calls
UNION
SELECT main_model FROM fact_sessions WHERE error IS NULL;
