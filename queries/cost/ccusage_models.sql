-- name: ccusage_models
-- The models and UTC days of the Claude Code usage of the sessions in `scope_sessions` (transcript_events): what ccusage's rules price.
-- params: (none)
SELECT DISTINCT t.model, DATE '1970-01-01' + CAST(floor(t.epoch / 86400) AS INTEGER) AS day
FROM transcript_events AS t
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
WHERE t.model IS NOT NULL AND t.input_tokens IS NOT NULL
ORDER BY t.model, day;
