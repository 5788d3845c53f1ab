-- name: cache_grouped
-- The calls of `cost_cache_calls` (queries/cost/cache_calls.sql) summed by $by (turn, session, agent, day): the key columns of that grouping (the others null), the prompt split, the hit rate, what the reads saved, the writes never read, and the prefix breaks with their tokens, cost and causes.
-- params: $by
WITH grouped AS (
    SELECT CASE WHEN $by IN ('session', 'agent', 'turn') THEN app_name END AS app_name,
           CASE WHEN $by IN ('session', 'turn') THEN user_id END AS user_id,
           CASE WHEN $by IN ('session', 'turn') THEN session_id END AS session_id,
           CASE WHEN $by = 'turn' THEN turn END AS turn,
           CASE WHEN $by = 'turn' THEN invocation_id END AS invocation_id,
           CASE WHEN $by = 'day' THEN day END AS day,
           CASE WHEN $by = 'agent' THEN agent END AS agent,
           count(*) AS calls,
           sum(prompt_tokens) AS prompt_tokens,
           sum(cache_read_tokens) AS cache_read_tokens,
           -- known only where every call's writes are
           CASE WHEN count(cache_write_tokens) = count(*) THEN sum(cache_write_tokens) END
               AS cache_write_tokens,
           CASE WHEN count(cache_write_tokens) = count(*) THEN sum(cache_write_1h_tokens) END
               AS cache_write_1h_tokens,
           CASE WHEN count(cache_write_tokens) = count(*) THEN sum(uncached_tokens) END
               AS uncached_tokens,
           CASE WHEN sum(prompt_tokens) > 0 THEN sum(cache_read_tokens) / sum(prompt_tokens) END
               AS hit_rate,
           -- money where every call has a price: a part is never shown as the whole
           CASE WHEN count(saved_usd) = count(*) THEN sum(saved_usd) END AS saved_usd,
           CASE WHEN count(saved_usd) = count(*)
                THEN sum(saved_usd) - sum(write_premium_usd_high) END AS net_saved_usd_low,
           CASE WHEN count(saved_usd) = count(*)
                THEN sum(saved_usd) - sum(write_premium_usd_low) END AS net_saved_usd_high,
           CASE WHEN count(cache_write_tokens) = count(*) THEN sum(unread_write_tokens) END
               AS unread_write_tokens,
           CASE WHEN count(cache_write_tokens) = count(*) AND count(saved_usd) = count(*)
                THEN sum(unread_write_usd_low) END AS unread_write_usd_low,
           CASE WHEN count(cache_write_tokens) = count(*) AND count(saved_usd) = count(*)
                THEN sum(unread_write_usd_high) END AS unread_write_usd_high,
           count(*) FILTER (WHERE is_break) AS breaks,
           coalesce(sum(break_tokens), 0) AS break_tokens,
           CASE WHEN count(saved_usd) = count(*)
                THEN coalesce(sum(break_cost_usd_low), 0) END AS break_cost_usd_low,
           CASE WHEN count(saved_usd) = count(*)
                THEN coalesce(sum(break_cost_usd_high), 0) END AS break_cost_usd_high,
           histogram(cause) FILTER (WHERE is_break) AS causes,
           count(*) FILTER (WHERE saved_usd IS NULL) AS unpriced_calls
    FROM cost_cache_calls
    GROUP BY ALL
)
SELECT * EXCLUDE (causes, unpriced_calls),
       -- each cause with its breaks, the most first
       (SELECT string_agg(e.key || ' ' || e.value, ', ' ORDER BY e.value DESC, e.key)
        FROM (SELECT unnest(map_entries(g.causes)) AS e)) AS break_causes,
       unpriced_calls
FROM grouped AS g
ORDER BY session_id, turn, invocation_id, day, app_name, user_id, agent;
