-- name: growth
-- (Spark SQL) Every session's tool calls ranked by how much their result grew the next request's window, as queries/facts/growth.sql ranks a selection of the store; all of them (a reader takes the top).
-- params: (none)
WITH t AS (
    SELECT g.*, CAST(bround(g.result_chars / r.chars_per_token, 0) AS BIGINT) AS tokens
    FROM fact_tool_calls AS g
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
    JOIN scope_ratios AS r ON r.model = fs.main_model
), sides AS (
    SELECT t.*,
           sum(t.tokens) OVER (PARTITION BY t.app_name, t.user_id, t.session_id,
                                            t.result_event_index) AS group_tokens,
           b.prompt_tokens AS before_m,
           CASE WHEN b.kind <> 'summarizer' THEN CAST(bround(
               (b.chars_user + b.chars_model + b.chars_tool + b.chars_summary)
               / rb.chars_per_token, 0) AS BIGINT) END AS before_e,
           a.prompt_tokens AS after_m,
           CASE WHEN a.kind <> 'summarizer' THEN CAST(bround(
               (a.chars_user + a.chars_model + a.chars_tool + a.chars_summary)
               / ra.chars_per_token, 0) AS BIGINT) END AS after_e,
           b.chars_user + b.chars_model + b.chars_tool + b.chars_summary AS before_chars,
           a.chars_user + a.chars_model + a.chars_tool + a.chars_summary AS after_chars,
           b.chars_low AS before_chars_low, b.chars_high AS before_chars_high,
           a.chars_low AS after_chars_low, a.chars_high AS after_chars_high,
           rb.chars_per_token AS before_cpt, ra.chars_per_token AS after_cpt
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
), ranges AS (
    SELECT *,
           CASE WHEN NOT is_measured AND before_chars_low IS NOT NULL AND before_e IS NOT NULL
                THEN CAST(bround(before_chars_low / before_cpt, 0) AS BIGINT) END AS before_low,
           CASE WHEN NOT is_measured AND before_chars_low IS NOT NULL AND before_e IS NOT NULL
                THEN CAST(bround(before_chars_high / before_cpt, 0) AS BIGINT) END AS before_high,
           CASE WHEN NOT is_measured AND after_chars_low IS NOT NULL AND after_e IS NOT NULL
                THEN CAST(bround(after_chars_low / after_cpt, 0) AS BIGINT) END AS after_low,
           CASE WHEN NOT is_measured AND after_chars_low IS NOT NULL AND after_e IS NOT NULL
                THEN CAST(bround(after_chars_high / after_cpt, 0) AS BIGINT) END AS after_high,
           CASE WHEN is_measured OR before_e IS NULL OR after_e IS NULL THEN NULL
                WHEN before_cpt = after_cpt AND grown_chars_low IS NULL THEN NULL
                WHEN before_cpt = after_cpt
                    THEN after_e - before_e
                         + (grown_chars_low - (after_chars - before_chars)) / after_cpt
                WHEN before_chars_low IS NULL AND after_chars_low IS NULL THEN NULL
                ELSE CAST(bround(coalesce(after_chars_low, after_chars) / after_cpt, 0) AS BIGINT)
                     - CAST(bround(coalesce(before_chars_high, before_chars) / before_cpt, 0)
                            AS BIGINT)
                END AS diff_low,
           CASE WHEN is_measured OR before_e IS NULL OR after_e IS NULL THEN NULL
                WHEN before_cpt = after_cpt AND grown_chars_low IS NULL THEN NULL
                WHEN before_cpt = after_cpt
                    THEN after_e - before_e
                         + (grown_chars_high - (after_chars - before_chars)) / after_cpt
                WHEN before_chars_low IS NULL AND after_chars_low IS NULL THEN NULL
                ELSE CAST(bround(coalesce(after_chars_high, after_chars) / after_cpt, 0) AS BIGINT)
                     - CAST(bround(coalesce(before_chars_low, before_chars) / before_cpt, 0)
                            AS BIGINT)
                END AS diff_high,
           CASE WHEN group_tokens = 0 THEN 1 ELSE group_tokens END AS share_of
    FROM chosen
), grown AS (
    SELECT g.*,
           CAST(bround((after_size - before_size) * tokens / share_of, 0) AS BIGINT) AS growth,
           CAST(bround(diff_low * tokens / share_of, 0) AS BIGINT) AS growth_low,
           CAST(bround(diff_high * tokens / share_of, 0) AS BIGINT) AS growth_high,
           fs.rules_range AS session_rules_range
    FROM ranges AS g
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
)
SELECT session_id, invocation_id, turn, agent, tool_name, function_call_id, latency_s,
       result_chars,
       tokens AS result_tokens_estimated,
       row_count AS `rows`,
       CASE WHEN row_count <> 0 THEN CAST(bround(tokens / row_count, 0) AS BIGINT) END AS tokens_per_row,
       before_size AS occupancy_before,
       before_low AS occupancy_before_low,
       before_high AS occupancy_before_high,
       after_size AS occupancy_after,
       after_low AS occupancy_after_low,
       after_high AS occupancy_after_high,
       CASE WHEN is_measured THEN 'measured' ELSE 'estimated' END AS occupancy_source,
       growth AS growth_tokens,
       growth_low AS growth_tokens_low,
       growth_high AS growth_tokens_high,
       CASE WHEN coalesce(before_low, after_low, growth_low) IS NOT NULL
            THEN session_rules_range END AS rules_range,
       CASE WHEN latency > 0 THEN CAST(bround(growth / latency, 0) AS BIGINT) END AS growth_tokens_per_s,
       parallel_results,
       resent_calls,
       tokens * resent_calls AS resent_tokens,
       resent_calls_in_turn,
       tokens * resent_calls_in_turn AS resent_tokens_in_turn
FROM grown
ORDER BY growth_tokens DESC NULLS LAST, result_chars DESC NULLS LAST,
         app_name, user_id, session_id, ordinal
