-- name: growth_figures
-- Per tool call of the sessions in `scope_sessions`: how much its result grew the next request's window (tokens from `scope_ratios`), the figures growth.sql ranks. Kept for every session where the facts are brought up to date (`growth_kept`, forensics/analysis/kept_growth.py).
-- params: (none)
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
), figures AS (
    SELECT app_name, user_id, session_id, ordinal, result_chars, tokens, before_size,
           after_size, is_measured, growth
    FROM grown
)
SELECT * FROM figures
ORDER BY app_name, user_id, session_id, ordinal;
