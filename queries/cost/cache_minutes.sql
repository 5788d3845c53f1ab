-- name: cache_minutes
-- The calls of `cost_cache_calls` (queries/cost/cache_calls.sql) summed by the minute they started in ($seconds, as cost/minutes.sql) and by agent: the prompt and its reads, what the reads saved (over the priced calls, null where none is; `unpriced` counts the others), the writes never read, and the prefix breaks with their cost (`unpriced_breaks` not in it) and how many are unexplained. The weekly review's cache section sums these by its local days and by agent.
-- params: $seconds
SELECT CAST(floor(trunc(started_at * 1000000) / (1000000.0 * $seconds)) AS BIGINT) * $seconds
           AS bucket,
       agent,
       count(*) AS calls,
       count(*) FILTER (WHERE saved_usd IS NULL) AS unpriced,
       sum(prompt_tokens) AS prompt_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       count(*) FILTER (WHERE cache_write_tokens IS NULL) AS writes_unknown,
       -- money over the priced calls only (null where none is): `unpriced` says how many
       sum(saved_usd) AS saved_usd,
       coalesce(sum(unread_write_tokens), 0) AS unread_write_tokens,
       sum(unread_write_usd_low) AS unread_write_usd_low,
       sum(unread_write_usd_high) AS unread_write_usd_high,
       count(*) FILTER (WHERE is_break) AS breaks,
       count(*) FILTER (WHERE is_break AND break_cost_usd_low IS NULL) AS unpriced_breaks,
       count(*) FILTER (WHERE cause = 'unexplained') AS unexplained_breaks,
       coalesce(sum(break_tokens), 0) AS break_tokens,
       sum(break_cost_usd_low) AS break_cost_usd_low,
       sum(break_cost_usd_high) AS break_cost_usd_high
FROM cost_cache_calls
GROUP BY ALL
ORDER BY bucket NULLS LAST, agent NULLS FIRST;
