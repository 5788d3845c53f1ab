-- name: turns
-- Per turn of the sessions in `scope_sessions`: calls, tool calls, wall time, peak occupancy and cumulative input (tokens from `scope_ratios`; where the session's ADK release is not known and its rule sets rebuild a call of the turn differently, the range over them of the estimates, and of the figures that hold an estimate (a call without usage): peak of the calls' lowest and highest, sum of each; and the rule boundaries that cause it), the largest tool result, the last error.
-- params: (none)
WITH sized AS (
    SELECT f.app_name, f.user_id, f.session_id, f.invocation_id, f.call_index,
           f.prompt_tokens AS measured, e.estimated,
           coalesce(round_even(f.chars_low / r.chars_per_token, 0)::BIGINT, e.estimated)
               AS estimated_low,
           coalesce(round_even(f.chars_high / r.chars_per_token, 0)::BIGINT, e.estimated)
               AS estimated_high,
           f.chars_low IS NOT NULL AS ranged,
           CASE WHEN f.prompt_tokens IS NOT NULL THEN f.prompt_tokens
                WHEN f.system_tools_chars IS NOT NULL
                    THEN e.estimated + round_even(f.system_tools_chars / r.chars_per_token, 0)
                WHEN k.constant IS NULL THEN e.estimated
                ELSE e.estimated + round_even(k.constant, 0) END::BIGINT AS best,
           CASE WHEN f.prompt_tokens IS NOT NULL THEN 'measured'
                WHEN f.system_tools_chars IS NOT NULL OR k.constant IS NULL THEN 'estimated'
                ELSE 'estimated+inferred' END AS best_source
    FROM fact_calls AS f
    SEMI JOIN scope_sessions AS o USING (app_name, user_id, session_id)
    JOIN scope_ratios AS r ON r.model = f.model
    LEFT JOIN scope_constants AS k
        ON k.model = f.model AND k.app_name = f.app_name AND k.agent = coalesce(f.author, '')
    CROSS JOIN LATERAL (
        SELECT round_even((f.chars_user + f.chars_model + f.chars_tool + f.chars_summary)
                          / r.chars_per_token, 0)::BIGINT AS estimated) AS e
    WHERE f.kind <> 'summarizer'
), ranged AS (
    -- a call without usage: its best figure moves with its estimate
    SELECT *,
           CASE WHEN measured IS NULL THEN best + estimated_low - estimated ELSE best END
               AS best_low,
           CASE WHEN measured IS NULL THEN best + estimated_high - estimated ELSE best END
               AS best_high
    FROM sized
), per_turn AS (
    SELECT app_name, user_id, session_id, invocation_id,
           count(*) AS calls,
           max(measured) AS peak_measured,
           max(estimated) AS peak_estimated,
           first(best ORDER BY best DESC, call_index) AS peak,
           first(best_source ORDER BY best DESC, call_index) AS peak_source,
           sum(measured) AS cumulative_measured,
           sum(estimated) AS cumulative_estimated,
           sum(best) AS cumulative,
           count(*) FILTER (WHERE best_source = 'measured') AS measured_calls,
           bool_or(ranged) AS ranged,
           max(estimated_low) AS peak_low,
           max(estimated_high) AS peak_high,
           sum(estimated_low) AS cumulative_low,
           sum(estimated_high) AS cumulative_high,
           bool_or(ranged AND measured IS NULL) AS best_ranged,
           max(best_low) AS peak_best_low,
           max(best_high) AS peak_best_high,
           sum(best_low) AS cumulative_best_low,
           sum(best_high) AS cumulative_best_high
    FROM ranged
    GROUP BY ALL
)
SELECT t.session_id, t.invocation_id, t.turn,
       coalesce(p.calls, 0) AS calls,
       t.tool_calls, t.wall_s,
       p.peak_measured AS peak_occupancy_measured,
       p.peak_estimated AS peak_occupancy_estimated,
       CASE WHEN p.ranged THEN p.peak_low END AS peak_occupancy_estimated_low,
       CASE WHEN p.ranged THEN p.peak_high END AS peak_occupancy_estimated_high,
       p.peak AS peak_occupancy,
       CASE WHEN p.best_ranged THEN p.peak_best_low END AS peak_occupancy_low,
       CASE WHEN p.best_ranged THEN p.peak_best_high END AS peak_occupancy_high,
       p.peak_source AS peak_occupancy_source,
       p.cumulative_measured AS cumulative_input_measured,
       coalesce(p.cumulative_estimated, 0) AS cumulative_input_estimated,
       CASE WHEN p.ranged THEN p.cumulative_low END AS cumulative_input_estimated_low,
       CASE WHEN p.ranged THEN p.cumulative_high END AS cumulative_input_estimated_high,
       CASE WHEN p.ranged THEN fs.rules_range END AS rules_range,
       p.cumulative AS cumulative_input,
       CASE WHEN p.best_ranged THEN p.cumulative_best_low END AS cumulative_input_low,
       CASE WHEN p.best_ranged THEN p.cumulative_best_high END AS cumulative_input_high,
       CASE WHEN p.calls IS NULL THEN NULL
            WHEN p.measured_calls = p.calls THEN 'measured'
            WHEN p.measured_calls = 0 THEN 'estimated'
            ELSE 'mixed' END AS cumulative_input_source,
       t.largest_tool_result,
       round_even(t.largest_result_chars / r.chars_per_token, 0)::BIGINT
           AS largest_result_tokens_estimated,
       t.error_code, t.error_message, t.started_at
FROM fact_turns AS t
JOIN scope_sessions AS o USING (app_name, user_id, session_id)
JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
JOIN scope_ratios AS r ON r.model = fs.main_model
LEFT JOIN per_turn AS p USING (app_name, user_id, session_id, invocation_id)
ORDER BY o.ordinal, t.turn;
