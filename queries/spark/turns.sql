-- name: turns
-- (Spark SQL) Every session's turns, as queries/facts/turns.sql computes them for a selection of the store; in key and turn order.
-- params: (none)
WITH estimated AS (
    SELECT f.*, r.chars_per_token, k.constant,
           CAST(bround((f.chars_user + f.chars_model + f.chars_tool + f.chars_summary)
                  / r.chars_per_token, 0) AS BIGINT) AS estimated
    FROM fact_calls AS f
    JOIN scope_ratios AS r ON r.model = f.model
    LEFT JOIN scope_constants AS k
        ON k.model = f.model AND k.app_name = f.app_name AND k.agent = coalesce(f.author, '')
    WHERE f.kind <> 'summarizer'
), sized AS (
    SELECT app_name, user_id, session_id, invocation_id, call_index,
           prompt_tokens AS measured, estimated,
           coalesce(CAST(bround(chars_low / chars_per_token, 0) AS BIGINT), estimated)
               AS estimated_low,
           coalesce(CAST(bround(chars_high / chars_per_token, 0) AS BIGINT), estimated)
               AS estimated_high,
           chars_low IS NOT NULL AS ranged,
           CASE WHEN prompt_tokens IS NOT NULL THEN prompt_tokens
                WHEN system_tools_chars IS NOT NULL
                    THEN estimated + CAST(bround(system_tools_chars / chars_per_token, 0) AS BIGINT)
                WHEN constant IS NULL THEN estimated
                ELSE estimated + CAST(bround(constant, 0) AS BIGINT) END AS best,
           CASE WHEN prompt_tokens IS NOT NULL THEN 'measured'
                WHEN system_tools_chars IS NOT NULL OR constant IS NULL THEN 'estimated'
                ELSE 'estimated+inferred' END AS best_source
    FROM estimated
), ranged AS (
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
           max(best) AS peak,
           min_by(best_source, named_struct('b', -best, 'c', call_index)) AS peak_source,
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
    GROUP BY app_name, user_id, session_id, invocation_id
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
       CAST(bround(t.largest_result_chars / r.chars_per_token, 0) AS BIGINT) AS largest_result_tokens_estimated,
       t.error_code, t.error_message, t.started_at
FROM fact_turns AS t
JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
JOIN scope_ratios AS r ON r.model = fs.main_model
LEFT JOIN per_turn AS p USING (app_name, user_id, session_id, invocation_id)
ORDER BY t.app_name, t.user_id, t.session_id, t.turn
