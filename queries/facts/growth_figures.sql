-- name: growth_figures
-- Per tool call of the sessions in `scope_sessions`: how much its result grew the next request's window (tokens from `scope_ratios`), the figures growth.sql ranks; where the session's ADK release is not known and its rule sets rebuild the two windows differently, the estimates' range over them (each window's, from the calls' lowest and highest characters; the growth's, from the lowest and highest characters grown between them, where both calls' model reads at one ratio, else from the windows' ranges). Kept for every session where the facts are brought up to date (`growth_kept`, forensics/analysis/kept_growth.py).
-- params: (none)
WITH t AS (
    SELECT g.app_name, g.user_id, g.session_id, g.ordinal, g.result_event_index,
           g.source_call_id, g.after_call_id, g.result_chars, g.latency,
           g.grown_chars_low, g.grown_chars_high,
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
               / ra.chars_per_token, 0)::BIGINT END AS after_e,
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
    -- estimated windows only: a measured pair has no range
    SELECT *,
           CASE WHEN NOT is_measured AND before_chars_low IS NOT NULL AND before_e IS NOT NULL
                THEN round_even(before_chars_low / before_cpt, 0)::BIGINT END AS before_low,
           CASE WHEN NOT is_measured AND before_chars_low IS NOT NULL AND before_e IS NOT NULL
                THEN round_even(before_chars_high / before_cpt, 0)::BIGINT END AS before_high,
           CASE WHEN NOT is_measured AND after_chars_low IS NOT NULL AND after_e IS NOT NULL
                THEN round_even(after_chars_low / after_cpt, 0)::BIGINT END AS after_low,
           CASE WHEN NOT is_measured AND after_chars_low IS NOT NULL AND after_e IS NOT NULL
                THEN round_even(after_chars_high / after_cpt, 0)::BIGINT END AS after_high,
           -- the window grown, lowest and highest: the rule sets' own where they grow it
           -- differently (one ratio), else, where a window has a range, the lowest after
           -- window less the highest before one (and the other way: two ratios turn the
           -- same characters grown into different tokens)
           CASE WHEN is_measured OR before_e IS NULL OR after_e IS NULL THEN NULL
                WHEN before_cpt = after_cpt AND grown_chars_low IS NULL THEN NULL
                WHEN before_cpt = after_cpt
                    THEN after_e - before_e
                         + (grown_chars_low - (after_chars - before_chars)) / after_cpt
                WHEN before_chars_low IS NULL AND after_chars_low IS NULL THEN NULL
                ELSE round_even(coalesce(after_chars_low, after_chars) / after_cpt, 0)
                     - round_even(coalesce(before_chars_high, before_chars) / before_cpt, 0)
                END AS diff_low,
           CASE WHEN is_measured OR before_e IS NULL OR after_e IS NULL THEN NULL
                WHEN before_cpt = after_cpt AND grown_chars_low IS NULL THEN NULL
                WHEN before_cpt = after_cpt
                    THEN after_e - before_e
                         + (grown_chars_high - (after_chars - before_chars)) / after_cpt
                WHEN before_chars_low IS NULL AND after_chars_low IS NULL THEN NULL
                ELSE round_even(coalesce(after_chars_high, after_chars) / after_cpt, 0)
                     - round_even(coalesce(before_chars_low, before_chars) / before_cpt, 0)
                END AS diff_high,
           CASE WHEN group_tokens = 0 THEN 1 ELSE group_tokens END AS share_of
    FROM chosen
), grown AS (
    SELECT *,
           round_even((after_size - before_size) * tokens / share_of, 0)::BIGINT AS growth,
           round_even(diff_low * tokens / share_of, 0)::BIGINT AS growth_low,
           round_even(diff_high * tokens / share_of, 0)::BIGINT AS growth_high
    FROM ranges
), figures AS (
    SELECT app_name, user_id, session_id, ordinal, result_chars, tokens, before_size,
           after_size, is_measured, growth, before_low, before_high, after_low, after_high,
           growth_low, growth_high
    FROM grown
)
SELECT * FROM figures
ORDER BY app_name, user_id, session_id, ordinal;
