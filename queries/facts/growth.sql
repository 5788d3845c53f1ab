-- name: growth
-- Tool calls of the sessions in `scope_sessions`, ranked by how much their result grew the next request's window, with what re-sending it cost (tokens from `scope_ratios`).
-- params: $top
-- The ranking reads only what the growth needs, a row per tool call; the rows shown are
-- then read whole (holding every column of every tool call through the joins and the
-- window took 230 MB at 1,000,000 events).
WITH t AS (
    SELECT g.app_name, g.user_id, g.session_id, g.ordinal, g.result_event_index,
           g.source_call_id, g.after_call_id, g.result_chars, g.latency,
           o.ordinal AS session_ordinal,
           round_even(g.result_chars / r.chars_per_token, 0)::BIGINT AS tokens
    FROM fact_tool_calls AS g
    JOIN scope_sessions AS o USING (app_name, user_id, session_id)
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
    JOIN scope_ratios AS r ON r.model = fs.main_model
), sides AS (
    SELECT t.*,
           sum(t.tokens) OVER (PARTITION BY t.app_name, t.user_id, t.session_id,
                                            t.result_event_index) AS group_tokens,
           b.prompt_tokens AS before_m,
           CASE WHEN b.kind <> 'summarizer' THEN round_even(
               (b.chars_user + b.chars_model + b.chars_tool + b.chars_summary)
               / rb.chars_per_token, 0)::BIGINT END AS before_e,
           a.prompt_tokens AS after_m,
           CASE WHEN a.kind <> 'summarizer' THEN round_even(
               (a.chars_user + a.chars_model + a.chars_tool + a.chars_summary)
               / ra.chars_per_token, 0)::BIGINT END AS after_e
    FROM t
    JOIN fact_calls AS b
        ON b.app_name = t.app_name AND b.user_id = t.user_id AND b.session_id = t.session_id
       AND b.call_id = t.source_call_id
    JOIN scope_ratios AS rb ON rb.model = b.model
    LEFT JOIN fact_calls AS a
        ON a.app_name = t.app_name AND a.user_id = t.user_id AND a.session_id = t.session_id
       AND a.call_id = t.after_call_id
    LEFT JOIN scope_ratios AS ra ON ra.model = a.model
), chosen AS (
    SELECT *,
           before_m IS NOT NULL AND after_m IS NOT NULL AS is_measured,
           CASE WHEN before_m IS NOT NULL AND after_m IS NOT NULL THEN before_m
                ELSE before_e END AS before_size,
           CASE WHEN before_m IS NOT NULL AND after_m IS NOT NULL THEN after_m
                ELSE after_e END AS after_size
    FROM sides
), grown AS (
    SELECT *,
           round_even((after_size - before_size) * tokens
                      / CASE WHEN group_tokens = 0 THEN 1 ELSE group_tokens END, 0)::BIGINT
               AS growth
    FROM chosen
), ranked AS (
    SELECT app_name, user_id, session_id, ordinal, session_ordinal, tokens, before_size,
           after_size, is_measured, growth
    FROM grown
    ORDER BY growth DESC NULLS LAST, result_chars DESC NULLS LAST, session_ordinal, ordinal
    LIMIT $top
)
SELECT g.session_id, g.invocation_id, g.turn, g.agent, g.tool_name, g.function_call_id,
       g.latency_s, g.result_chars,
       k.tokens AS result_tokens_estimated,
       g.row_count AS "rows",
       CASE WHEN g.row_count <> 0 THEN round_even(k.tokens / g.row_count, 0)::BIGINT END
           AS tokens_per_row,
       k.before_size AS occupancy_before,
       k.after_size AS occupancy_after,
       CASE WHEN k.is_measured THEN 'measured' ELSE 'estimated' END AS occupancy_source,
       k.growth AS growth_tokens,
       CASE WHEN g.latency > 0 THEN round_even(k.growth / g.latency, 0)::BIGINT END
           AS growth_tokens_per_s,
       g.parallel_results,
       g.resent_calls,
       k.tokens * g.resent_calls AS resent_tokens,
       g.resent_calls_in_turn,
       k.tokens * g.resent_calls_in_turn AS resent_tokens_in_turn
FROM ranked AS k
JOIN fact_tool_calls AS g USING (app_name, user_id, session_id, ordinal)
ORDER BY k.growth DESC NULLS LAST, g.result_chars DESC NULLS LAST, k.session_ordinal, k.ordinal;
