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
           CASE WHEN prompt_tokens IS NOT NULL THEN prompt_tokens
                WHEN system_tools_chars IS NOT NULL
                    THEN estimated + CAST(bround(system_tools_chars / chars_per_token, 0) AS BIGINT)
                WHEN constant IS NULL THEN estimated
                ELSE estimated + CAST(bround(constant, 0) AS BIGINT) END AS best,
           CASE WHEN prompt_tokens IS NOT NULL THEN 'measured'
                WHEN system_tools_chars IS NOT NULL OR constant IS NULL THEN 'estimated'
                ELSE 'estimated+inferred' END AS best_source
    FROM estimated
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
           count(*) FILTER (WHERE best_source = 'measured') AS measured_calls
    FROM sized
    GROUP BY app_name, user_id, session_id, invocation_id
)
SELECT t.session_id, t.invocation_id, t.turn,
       coalesce(p.calls, 0) AS calls,
       t.tool_calls, t.wall_s,
       p.peak_measured AS peak_occupancy_measured,
       p.peak_estimated AS peak_occupancy_estimated,
       p.peak AS peak_occupancy,
       p.peak_source AS peak_occupancy_source,
       p.cumulative_measured AS cumulative_input_measured,
       coalesce(p.cumulative_estimated, 0) AS cumulative_input_estimated,
       p.cumulative AS cumulative_input,
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
