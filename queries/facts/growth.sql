-- name: growth
-- Tool calls of the sessions in `scope_sessions`, ranked by how much their result grew the next request's window (where the session's ADK release is not known and its rule sets rebuild the windows differently, with the estimates' range and the rule boundaries that cause it), with what re-sending it cost: the figures of `growth_figures` (growth_figures.sql, or those kept for the store's fitted ratios: growth_kept_rows.sql).
-- params: $top
-- The ranking reads only what the growth needs, a row per tool call; the rows shown are
-- then read whole (holding every column of every tool call through the joins and the
-- window took 230 MB at 1,000,000 events).
WITH ranked AS (
    SELECT f.app_name, f.user_id, f.session_id, f.ordinal, o.ordinal AS session_ordinal,
           f.tokens, f.before_size, f.after_size, f.is_measured, f.growth,
           f.before_low, f.before_high, f.after_low, f.after_high, f.growth_low,
           f.growth_high
    FROM growth_figures AS f
    JOIN scope_sessions AS o USING (app_name, user_id, session_id)
    ORDER BY f.growth DESC NULLS LAST, f.result_chars DESC NULLS LAST, session_ordinal,
             f.ordinal
    LIMIT $top
)
SELECT g.session_id, g.invocation_id, g.turn, g.agent, g.tool_name, g.function_call_id,
       g.latency_s, g.result_chars,
       k.tokens AS result_tokens_estimated,
       g.row_count AS "rows",
       CASE WHEN g.row_count <> 0 THEN round_even(k.tokens / g.row_count, 0)::BIGINT END
           AS tokens_per_row,
       k.before_size AS occupancy_before,
       k.before_low AS occupancy_before_low,
       k.before_high AS occupancy_before_high,
       k.after_size AS occupancy_after,
       k.after_low AS occupancy_after_low,
       k.after_high AS occupancy_after_high,
       CASE WHEN k.is_measured THEN 'measured' ELSE 'estimated' END AS occupancy_source,
       k.growth AS growth_tokens,
       k.growth_low AS growth_tokens_low,
       k.growth_high AS growth_tokens_high,
       CASE WHEN coalesce(k.before_low, k.after_low, k.growth_low) IS NOT NULL
            THEN fs.rules_range END AS rules_range,
       CASE WHEN g.latency > 0 THEN round_even(k.growth / g.latency, 0)::BIGINT END
           AS growth_tokens_per_s,
       g.parallel_results,
       g.resent_calls,
       k.tokens * g.resent_calls AS resent_tokens,
       g.resent_calls_in_turn,
       k.tokens * g.resent_calls_in_turn AS resent_tokens_in_turn
FROM ranked AS k
JOIN fact_tool_calls AS g USING (app_name, user_id, session_id, ordinal)
JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
ORDER BY k.growth DESC NULLS LAST, g.result_chars DESC NULLS LAST, k.session_ordinal, k.ordinal;
