-- name: scope_sizes
-- The events each session in `scope_sessions` was built from, in its order: what a run of sessions weighs when a frame is read a run at a time.
-- params: (none)
SELECT coalesce(f.events, 0) AS events
FROM scope_sessions AS o
JOIN fact_sessions AS f USING (app_name, user_id, session_id)
ORDER BY o.ordinal;
