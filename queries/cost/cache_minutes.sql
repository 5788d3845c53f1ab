-- name: cache_minutes
-- The calls of `cost_cache_calls` (queries/cost/cache_calls.sql) summed by the minute they started in ($seconds, as cost/minutes.sql) and by agent: the prompt and its reads, what the reads saved (over the priced calls; `unpriced` counts the others), the writes never read where every call's writes are known, and the prefix breaks with their cost. The weekly review's cache section sums these by its local days and by agent.
-- params: $seconds
SELECT CAST(floor(trunc(started_at * 1000000) / (1000000.0 * $seconds)) AS BIGINT) * $seconds
           AS bucket,
       agent,
       count(*) AS calls,
       count(*) FILTER (WHERE saved_usd IS NULL) AS unpriced,
       sum(prompt_tokens) AS prompt_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       count(*) FILTER (WHERE cache_write_tokens IS NULL) AS writes_unknown,
       coalesce(sum(saved_usd), 0) AS saved_usd,
       coalesce(sum(unread_write_tokens), 0) AS unread_write_tokens,
       coalesce(sum(unread_write_usd_low), 0) AS unread_write_usd_low,
       coalesce(sum(unread_write_usd_high), 0) AS unread_write_usd_high,
       count(*) FILTER (WHERE is_break) AS breaks,
       coalesce(sum(break_tokens), 0) AS break_tokens,
       coalesce(sum(break_cost_usd_low), 0) AS break_cost_usd_low,
       coalesce(sum(break_cost_usd_high), 0) AS break_cost_usd_high
FROM cost_cache_calls
GROUP BY ALL
ORDER BY bucket NULLS LAST, agent NULLS FIRST;
