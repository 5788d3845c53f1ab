-- name: keys
-- The models and UTC days of the model calls of the sessions in `scope_sessions`: what must be priced (the model as queries/cost/calls.sql chooses it: a fast request's as `<model> (fast)`).
-- params: (none)
SELECT DISTINCT
       coalesce(c.model_version, CASE WHEN c.kind = 'summarizer' THEN s.main_model END, '')
           || CASE WHEN t.speed = 'fast' THEN ' (fast)' ELSE '' END AS model,
       DATE '1970-01-01' + CAST(floor(c.epoch / 86400) AS INTEGER) AS day
FROM fact_calls AS c
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
JOIN fact_sessions AS s USING (app_name, user_id, session_id)
LEFT JOIN transcript_events AS t
    ON t.app_name = c.app_name AND t.user_id = c.user_id AND t.session_id = c.session_id
   AND t.event_id = c.call_id AND t.kind = 'call'
ORDER BY model, day;
