-- name: keys
-- The models and UTC days of the model calls of the sessions in `scope_sessions`: what must be priced (the model as queries/cost/calls.sql chooses it).
-- params: (none)
SELECT DISTINCT
       coalesce(c.model_version, CASE WHEN c.kind = 'summarizer' THEN s.main_model END, '')
           AS model,
       CAST(make_timestamp(CAST(round(c.epoch * 1000000) AS BIGINT)) AS DATE) AS day
FROM fact_calls AS c
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
JOIN fact_sessions AS s USING (app_name, user_id, session_id)
ORDER BY model, day;
