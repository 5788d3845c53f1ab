-- name: stored_first_sends
-- Per tool call of the sessions in `scope_sessions`: its row of `priced_first_sends` (queries/cost/first_sends.sql over the whole store at all times, kept with `priced_calls`: forensics/cost/stored.py); for a selection without a time range.
-- params: (none)
SELECT p.*
FROM priced_first_sends AS p
SEMI JOIN scope_sessions USING (app_name, user_id, session_id);
