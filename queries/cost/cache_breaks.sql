-- name: cache_breaks
-- The $top prefix breaks of `cost_cache_calls` that cost most (high bound, then tokens, then the session and call in order), each with its call, agent, tokens, cost and cause.
-- params: $top
SELECT app_name, user_id, session_id, call_id, call_index, turn, agent, started_at, model,
       break_tokens, break_cost_usd_low, break_cost_usd_high, cause, cause_source, gap_s
FROM cost_cache_calls
WHERE is_break
ORDER BY break_cost_usd_high DESC NULLS LAST, break_tokens DESC, app_name, user_id, session_id,
         call_index
LIMIT $top;
