-- name: stored_tool_calls
-- Per tool call of the sessions in `scope_sessions`: its row of `priced_tool_calls` (queries/cost/tool_calls.sql over the whole store at all times, kept with `priced_calls`: forensics/cost/stored.py), in tool_calls.sql's order; for a selection without a time range (a range changes which sends are counted).
-- params: (none)
SELECT p.*
FROM priced_tool_calls AS p
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
ORDER BY app_name, user_id, session_id, ordinal;
