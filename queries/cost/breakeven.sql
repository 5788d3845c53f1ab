-- name: breakeven
-- The money `forensics breakeven` weighs, low bounds, per agent of `cost_calls` (`whole` false; a summarizer's calls count only in the whole) and for all calls (`whole` true): the calls' cost, their cache reads plus writes, the tool output at its first send (`cost_first_sends`, by the agent that called the tool), and the input cost (cache reads, uncached input, writes) of each session's last call (failed and summarizer calls aside) summed, with how many sessions have one; a sum is unknown (null) when one of its parts is, and 0 where there is none.
-- params: (none)
WITH totals AS (
    SELECT agent, GROUPING(agent) = 1 AS whole,
           count(DISTINCT session_id) AS sessions, count(*) AS calls,
           count(*) FILTER (WHERE kind <> 'summarizer') AS agent_calls,
           count(*) FILTER (WHERE cost_source = 'unknown') AS unpriced_calls,
           CASE WHEN count(cost_usd_low) = count(*) THEN coalesce(sum(cost_usd_low), 0) END
               AS total_usd,
           CASE WHEN count(cache_read_usd_low) = count(*)
                 AND count(cache_write_usd_low) = count(*)
                THEN coalesce(sum(cache_read_usd_low), 0) + coalesce(sum(cache_write_usd_low), 0)
           END AS cache_usd
    FROM cost_calls
    GROUP BY GROUPING SETS ((agent), ())
), ranked AS (
    -- each session's last call, of each agent and of all (the greatest key on a tie)
    SELECT agent, session_id, cache_read_usd_low, uncached_input_usd_low,
           cache_write_usd_low,
           row_number() OVER (PARTITION BY agent, session_id
                              ORDER BY call_index DESC, app_name DESC, user_id DESC) AS mine,
           row_number() OVER (PARTITION BY session_id
                              ORDER BY call_index DESC, app_name DESC, user_id DESC) AS ours
    FROM cost_calls
    WHERE kind NOT IN ('failed', 'summarizer')
), lasts AS (
    SELECT agent, whole, count(*) AS last_calls,
           CASE WHEN count(cache_read_usd_low) = count(*)
                THEN coalesce(sum(cache_read_usd_low), 0) END AS last_read_usd,
           CASE WHEN count(uncached_input_usd_low) = count(*)
                THEN coalesce(sum(uncached_input_usd_low), 0) END AS last_uncached_usd,
           CASE WHEN count(cache_write_usd_low) = count(*)
                THEN coalesce(sum(cache_write_usd_low), 0) END AS last_write_usd
    FROM (SELECT *, false AS whole FROM ranked WHERE mine = 1
          UNION ALL
          SELECT * REPLACE (NULL AS agent), true AS whole FROM ranked WHERE ours = 1)
    GROUP BY ALL
), tools AS (
    SELECT g.agent, GROUPING(g.agent) = 1 AS whole,
           CASE WHEN count(f.first_send) = count(*) THEN coalesce(sum(f.first_send), 0) END
               AS tool_usd
    FROM (SELECT *, CASE WHEN after_call_id IS NULL THEN CAST(0 AS DECIMAL(38, 18))
                         ELSE first_low END AS first_send
          FROM cost_first_sends) AS f
    JOIN fact_tool_calls AS g USING (app_name, user_id, session_id, ordinal)
    GROUP BY GROUPING SETS ((g.agent), ())
)
SELECT t.agent, t.whole, t.sessions, t.calls, t.agent_calls, t.unpriced_calls, t.total_usd,
       t.cache_usd,
       CASE WHEN o.whole IS NULL THEN CAST(0 AS DECIMAL(38, 18)) ELSE o.tool_usd END
           AS tool_usd,
       coalesce(l.last_calls, 0) AS last_calls, l.last_read_usd, l.last_uncached_usd,
       l.last_write_usd
FROM totals AS t
LEFT JOIN tools AS o ON o.whole = t.whole AND o.agent IS NOT DISTINCT FROM t.agent
LEFT JOIN lasts AS l ON l.whole = t.whole AND l.agent IS NOT DISTINCT FROM t.agent
ORDER BY t.whole, t.agent;
