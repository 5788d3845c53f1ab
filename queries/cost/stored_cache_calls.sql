-- name: stored_cache_calls
-- Per model call of the sessions in `scope_sessions`, in the time of `cache_window`: its row of `cached_calls` (queries/cost/cache_calls.sql over the whole store at all times with the default break rules, kept with `priced_calls`: forensics/cost/stored.py), in cache_calls.sql's order.
-- params: (none)
SELECT k.*
FROM cached_calls AS k
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
WHERE k.started_at >= coalesce((SELECT since FROM cache_window), '-infinity'::DOUBLE)
  AND k.started_at < coalesce((SELECT until FROM cache_window), 'infinity'::DOUBLE)
ORDER BY app_name, user_id, session_id, call_index;
