-- name: models
-- (Spark SQL) The models whose ratios the facts need, as queries/facts/models.sql finds them for a selection: every call's model and every session's main model (a session whose rebuild raised has none: scope_sessions skips it).
-- params: (none)
SELECT model FROM fact_calls
UNION
SELECT main_model FROM fact_sessions WHERE error IS NULL
