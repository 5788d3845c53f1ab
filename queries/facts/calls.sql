-- name: calls
-- Per call of the sessions in `scope_sessions`: occupancy measured, estimated (characters over `scope_ratios`' ratio of the call's model; where the session's ADK release is not known and its rule sets rebuild the window differently, the lowest and highest estimate and the rule boundaries that cause them) and by role, cumulative input in its turn, in session and call order.
-- params: $turn
WITH c AS (
    SELECT f.*, s.source, r.chars_per_token AS cpt, fs.rules_range, r.source AS ratio_source,
           r.model AS ratio_model, r.note AS ratio_note, r.shown_chars_per_token,
           r.shown_mean_abs_error, k.constant, o.ordinal AS session_ordinal,
           f.chars_user + f.chars_model + f.chars_tool + f.chars_summary AS all_chars
    FROM fact_calls AS f
    JOIN scope_sessions AS o USING (app_name, user_id, session_id)
    JOIN sessions AS s USING (app_name, user_id, session_id)
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
    JOIN scope_ratios AS r ON r.model = f.model
    LEFT JOIN scope_constants AS k
        ON k.model = f.model AND k.app_name = f.app_name AND k.agent = coalesce(f.author, '')
), sized AS (
    SELECT *,
           prompt_tokens AS measured,
           CASE WHEN kind <> 'summarizer' THEN round_even(all_chars / cpt, 0)::BIGINT END
               AS estimated,
           round_even(chars_low / cpt, 0)::BIGINT AS estimated_low,
           round_even(chars_high / cpt, 0)::BIGINT AS estimated_high,
           round_even(chars_user / cpt, 0)::BIGINT AS t_user,
           round_even(chars_model / cpt, 0)::BIGINT AS t_model,
           round_even(chars_tool / cpt, 0)::BIGINT AS t_tool,
           round_even(chars_summary / cpt, 0)::BIGINT AS t_summary,
           round_even(system_tools_chars / cpt, 0)::BIGINT AS t_system_tools
    FROM c
), best AS (
    SELECT *,
           CASE WHEN measured IS NOT NULL AND kind <> 'summarizer'
                THEN measured - (t_user + t_model + t_tool + t_summary) END AS residual,
           CASE WHEN kind = 'summarizer' OR measured IS NOT NULL THEN measured
                WHEN system_tools_chars IS NOT NULL THEN estimated + t_system_tools
                WHEN constant IS NULL THEN estimated
                ELSE estimated + round_even(constant, 0)::BIGINT END AS best,
           CASE WHEN measured IS NOT NULL THEN 'measured'
                WHEN kind = 'summarizer' THEN NULL
                WHEN system_tools_chars IS NOT NULL OR constant IS NULL THEN 'estimated'
                ELSE 'estimated+inferred' END AS best_source
    FROM sized
), running AS (
    SELECT *,
           sum(CASE WHEN kind <> 'summarizer' THEN measured END) OVER turn_so_far AS run_measured,
           sum(CASE WHEN kind <> 'summarizer' THEN estimated END) OVER turn_so_far
               AS run_estimated,
           sum(CASE WHEN kind <> 'summarizer' THEN best END) OVER turn_so_far AS run_best,
           count(CASE WHEN kind <> 'summarizer' THEN 1 END) OVER turn_so_far AS run_calls,
           count(CASE WHEN kind <> 'summarizer' AND best_source = 'measured' THEN 1 END)
               OVER turn_so_far AS run_measured_calls
    FROM best
    WINDOW turn_so_far AS (
        PARTITION BY app_name, user_id, session_id, invocation_id
        ORDER BY call_index ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT call_id, session_id, app_name, user_id, invocation_id, turn,
       CASE WHEN kind = 'summarizer' THEN 'summarizer' ELSE author END AS agent,
       kind, epoch AS "timestamp", model_version,
       measured AS occupancy_measured,
       estimated AS occupancy_estimated,
       CASE WHEN kind <> 'summarizer' THEN estimated_low END AS occupancy_estimated_low,
       CASE WHEN kind <> 'summarizer' THEN estimated_high END AS occupancy_estimated_high,
       CASE WHEN kind <> 'summarizer' AND chars_low IS NOT NULL THEN rules_range END
           AS rules_range,
       best AS occupancy,
       best_source AS occupancy_source,
       CASE WHEN kind <> 'summarizer' THEN run_measured END AS cumulative_input_measured,
       CASE WHEN kind <> 'summarizer' THEN run_estimated END AS cumulative_input_estimated,
       CASE WHEN kind <> 'summarizer' THEN run_best END AS cumulative_input,
       CASE WHEN kind = 'summarizer' THEN NULL
            WHEN run_measured_calls = run_calls THEN 'measured'
            WHEN run_measured_calls = 0 THEN 'estimated'
            ELSE 'mixed' END AS cumulative_input_source,
       cached_tokens,
       CASE WHEN kind <> 'summarizer' THEN all_chars END AS chars,
       CASE WHEN kind <> 'summarizer' THEN window_source END AS window_source,
       system_tools_chars,
       struct_pack(
           "user" := t_user, model := t_model, tool := t_tool, summary := t_summary,
           inferred_system := CASE WHEN system_tools_chars IS NOT NULL THEN t_system_tools
                                   WHEN residual >= 0 THEN residual END) AS by_role,
       residual AS system_residual,
       CASE WHEN measured <> 0 AND estimated IS NOT NULL
                 AND ratio_source IN ('fitted', 'traced')
            THEN (estimated + coalesce(constant, 0) - measured) / measured END AS estimate_error,
       coalesce(measured <> 0 AND estimated IS NOT NULL AND estimated > measured * 1.25, false)
           AS gauge_blind,
       ratio_source, ratio_model, ratio_note,
       shown_chars_per_token AS chars_per_token,
       shown_mean_abs_error AS ratio_mean_abs_error,
       source, error_code
FROM running
WHERE $turn IS NULL OR turn = $turn
ORDER BY session_ordinal, call_index;
