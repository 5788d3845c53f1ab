-- name: stored_calls
-- Per model call of the sessions in `scope_sessions`, in the time of `cost_window`: its row of `priced_calls` (queries/cost/calls.sql over the whole store, kept where the facts are brought up to date with the book the store prices by: forensics/cost/stored.py), in calls.sql's order.
-- params: (none)
SELECT p.*
FROM priced_calls AS p
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
WHERE p.started_at >= coalesce((SELECT since FROM cost_window), '-infinity'::DOUBLE)
  AND p.started_at < coalesce((SELECT until FROM cost_window), 'infinity'::DOUBLE)
ORDER BY app_name, user_id, session_id, call_index;
